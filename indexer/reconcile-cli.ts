import { runCli } from "../src/operator/cli.js"
import { reconcileCommand } from "./reconcile-command.js"

// the commands: reconcile-command.ts (a test runs them in its own process); this entry runs them and exits with their code
runCli(reconcileCommand, "reconcile")
