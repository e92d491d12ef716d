import { runCli } from "../operator/cli.js"
import { payCommand } from "./pay-command.js"

// the commands: pay-command.ts (a test runs them in its own process); this entry runs them and exits with their code
runCli(payCommand, "pay")
