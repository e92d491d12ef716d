import { runCli } from "../src/operator/cli.js"
import { custodyCommand } from "./custody-command.js"

// the commands: custody-command.ts (a test runs them in its own process); this entry runs them and exits with their code
runCli(custodyCommand, "custody")
