import { runCli } from "../operator/cli.js"
import { webhooksCommand } from "./webhooks-command.js"

// the commands: webhooks-command.ts (a test runs them in its own process); this entry runs them and exits with their code
runCli(webhooksCommand, "webhooks")
