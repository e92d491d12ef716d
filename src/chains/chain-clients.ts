import { Context, Effect, Layer, Option } from "effect"
import type { Chain } from "../domain/chain.js"
import type { ChainClient } from "./chain-client.js"
import { ChainEndpoints } from "./chain-endpoints.js"
import { makeBep20Client } from "./evm/bep20-client.js"
import { makeSolanaClient } from "./solana/solana-client.js"
import { makeTronClient } from "./tron/tron-client.js"

/** One client per chain family, over the configured endpoints; what the indexers and custody use. */
export class ChainClients extends Context.Tag("facet/ChainClients")<ChainClients, {
  readonly get: (chain: Chain) => Option.Option<ChainClient>
  readonly all: ReadonlyArray<ChainClient>
}>() {}

export const ChainClientsLive = Layer.effect(
  ChainClients,
  Effect.gen(function*() {
    const endpoints = yield* ChainEndpoints
    const clients: ReadonlyArray<ChainClient> = [
      yield* makeTronClient({ url: endpoints.tron.url, tokens: endpoints.tron.tokens, confirmations: endpoints.tron.confirmations }),
      yield* makeBep20Client({
        rpcUrl: endpoints.bep20.rpcUrl,
        chainId: endpoints.bep20.chainId,
        tokens: endpoints.bep20.tokens,
        confirmations: endpoints.bep20.confirmations,
        traces: endpoints.bep20.traces
      }),
      yield* makeSolanaClient({ rpcUrl: endpoints.solana.rpcUrl, tokens: endpoints.solana.tokens })
    ]
    return { get: (chain) => Option.fromNullable(clients.find((c) => c.chain === chain)), all: clients }
  })
)
