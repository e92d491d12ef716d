import { BaseSequencer, type TestSpecification } from "vitest/node"
import { defineConfig } from "vitest/config"
import { createHash } from "node:crypto"

/**
 * The suites that take a minute or more (most run the whole service or a devnet scenario), longest first. A
 * fresh CI has no timing cache, and vitest then starts the largest files first: these are small files that
 * drive long scenarios, so they came last and ran alone while the other worker sat idle (~1 min of 11).
 */
const LONG_SUITES = [
  // 64 seeds of the adversarial simulation and its teeth, two at a time
  "test/sim/simulation.test.ts",
  "custody/custody-crash.test.ts",
  "custody/energy-crash.test.ts",
  "custody/withdrawal-policy.test.ts",
  "test/faults/faults.test.ts",
  "src/devnet/service-restart.test.ts",
  "custody/withdrawals.test.ts",
  "http/console.test.ts",
  "test/faults/money-out.test.ts",
  "test/faults/real-providers.test.ts"
]

/**
 * Files share a fork one after another (isolate: false below). FACET_TEST_SHUFFLE_SEED=n runs them in an
 * order of its own (seeded, so a failure can be replayed): a file that passes only after another one, or that
 * breaks the files after it in its fork, shows up. The tests inside each file keep their order.
 */
const shuffled = (files: ReadonlyArray<TestSpecification>, seed: string) => {
  const key = (file: TestSpecification) => createHash("sha256").update(`${seed}:${file.moduleId}`).digest("hex")
  return [...files].sort((a, b) => key(a).localeCompare(key(b)))
}

class LongSuitesFirst extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    const seed = process.env.FACET_TEST_SHUFFLE_SEED
    if (seed !== undefined) {
      const order = shuffled(files, seed)
      console.log(`files shuffled (FACET_TEST_SHUFFLE_SEED=${seed})`)
      return order
    }
    const sorted = await super.sort(files)
    const rank = (file: TestSpecification) => LONG_SUITES.findIndex((suite) => file.moduleId.endsWith(suite))
    const long = sorted.filter((file) => rank(file) >= 0).sort((a, b) => rank(a) - rank(b))
    return [...long, ...sorted.filter((file) => rank(file) < 0)]
  }
}

export default defineConfig({
  test: {
    include: ["{src,http,indexer,custody,test,client}/**/*.test.ts"],
    globalSetup: ["./test/global-setup.ts"],
    setupFiles: ["./test/shared-worker-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // files in parallel, each against its own database in the one PostgreSQL. Three on two cores: the suites
    // wait on blocks and polls a fifth of the time, so a third file fills the gaps (fresh-clone CI 11m06s with
    // two, 10m17s with three, every suite passing)
    pool: "forks",
    // each fork runs file after file (isolate: false): effect, viem, tronweb, @solana/web3.js, litesvm and the
    // service's modules are loaded once per fork, not once per file (about 3 s of CPU a file). Test files leave
    // process.env alone (test/ci/shared-worker.test.ts; test/shared-worker-setup.ts puts it back after each).
    // minForks = maxForks: with fewer, tinypool retires a fork that goes idle with a zero timeout, which can
    // race a file being handed to it ("Terminating worker thread", the file never run, the fork left running)
    poolOptions: { forks: { maxForks: 3, minForks: 3, isolate: false } },
    sequence: { sequencer: LongSuitesFirst }
  }
})
