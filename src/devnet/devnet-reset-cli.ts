import { runCli } from "../operator/cli.js"
import { devnetResetCommand } from "./devnet-reset-command.js"

// the commands: devnet-reset-command.ts (a test runs them in its own process); this entry runs them and exits with their code
runCli(devnetResetCommand, "devnet:reset")
