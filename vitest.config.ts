import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["{src,http,indexer,custody,test}/**/*.test.ts"],
    globalSetup: ["./test/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // two cores: run files in parallel, each against its own database in the one PostgreSQL
    pool: "forks",
    poolOptions: { forks: { maxForks: 2, minForks: 1 } }
  }
})
