import { runCli } from "../src/operator/cli.js"
import { indexerCommand } from "./indexer-command.js"

// the commands: indexer-command.ts (a test runs them in its own process); this entry runs them and exits with their code
runCli(indexerCommand, "indexer")
