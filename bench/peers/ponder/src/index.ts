import { ponder } from "ponder:registry";
import { transfer } from "ponder:schema";

ponder.on("Token:Transfer", async ({ event, context }) => {
  await context.db.insert(transfer).values({
    id: event.id,
    blockNumber: event.block.number,
    txHash: event.transaction.hash,
    logIndex: event.log.logIndex,
    from: event.args.from,
    to: event.args.to,
    amount: event.args.value,
  });
});
