import { runCli } from "../src/operator/cli.js"
import { withdrawalsCommand, WithdrawalsOperatorLive } from "./withdrawals-command.js"

// `npm run withdrawals`: the commands and the services they run on are in withdrawals-command.ts (a test runs
// them in its own process); this entry runs them and exits with their code
runCli(withdrawalsCommand(WithdrawalsOperatorLive), "withdrawals")
