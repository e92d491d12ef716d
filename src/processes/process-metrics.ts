/**
 * The process's own gauges in Prometheus text, named as prom-client's defaults are so existing
 * dashboards read them: memory (resident, heap, external), CPU time, start time. The load bench reads
 * them to show whether memory stays flat over a soak.
 */
export const processMetrics = (): string => {
  const memory = process.memoryUsage()
  const cpu = process.cpuUsage()
  const startSeconds = Math.round(Date.now() / 1000 - process.uptime())
  const gauge = (name: string, help: string, type: "gauge" | "counter", value: number) => [
    `# HELP ${name} ${help}`,
    `# TYPE ${name} ${type}`,
    `${name} ${value}`
  ]
  return (
    [
      ...gauge("process_resident_memory_bytes", "Resident memory size in bytes.", "gauge", memory.rss),
      ...gauge("nodejs_heap_size_used_bytes", "V8 heap in use, in bytes.", "gauge", memory.heapUsed),
      ...gauge("nodejs_heap_size_total_bytes", "V8 heap reserved, in bytes.", "gauge", memory.heapTotal),
      ...gauge(
        "nodejs_external_memory_bytes",
        "Memory of C++ objects bound to JavaScript (buffers), in bytes.",
        "gauge",
        memory.external
      ),
      ...gauge(
        "process_cpu_seconds_total",
        "User and system CPU time spent, in seconds.",
        "counter",
        (cpu.user + cpu.system) / 1e6
      ),
      ...gauge(
        "process_start_time_seconds",
        "Start time of the process since the Unix epoch, in seconds.",
        "gauge",
        startSeconds
      )
    ].join("\n") + "\n"
  )
}
