import { runCli } from "./operator/cli.js"
import { migrateCommand } from "./migrate-command.js"

// the commands: migrate-command.ts (a test runs them in its own process); this entry runs them and exits with their code
runCli(migrateCommand, "migrate")
