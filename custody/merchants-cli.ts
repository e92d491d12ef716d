import { runCli } from "../src/operator/cli.js"
import { merchantsCommand, MerchantsOperatorLive } from "./merchants-command.js"

// `npm run merchants`: the commands and the services they run on are in merchants-command.ts (a test runs them
// in its own process); this entry runs them and exits with their code
runCli(merchantsCommand(MerchantsOperatorLive), "merchants")
