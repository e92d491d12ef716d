import { Config, Context, Effect, Layer, Option } from "effect"
import { isNonEmptyReadonlyArray } from "effect/Array"
import type { Chain } from "../domain/chain.js"
import type { ChainClient } from "./chain-client.js"
import { ChainEndpoints } from "./chain-endpoints.js"
import { type ChainEndpoint, endpointLabel, type EndpointHealth, makeFailoverClient } from "./failover-client.js"
import { makeBep20Client } from "./evm/bep20-client.js"
import { nodeBudgetConfig } from "./node-budget.js"
import { headersFor, nodeHeadersConfig, type NodeHeaders } from "./node-headers.js"
import { AppConfig } from "../config.js"
import { makeSolanaClient } from "./solana/solana-client.js"
import { makeTronClient } from "./tron/tron-client.js"

/** One client per chain family, over the configured endpoints; what the indexers and custody use. */
export class ChainClients extends Context.Tag("facet/ChainClients")<
  ChainClients,
  {
    readonly get: (chain: Chain) => Option.Option<ChainClient>
    readonly all: ReadonlyArray<ChainClient>
    /** Per chain with several nodes configured: how each is doing (for /health). */
    readonly nodes: Effect.Effect<
      ReadonlyArray<{ readonly chain: Chain; readonly endpoints: ReadonlyArray<EndpointHealth> }>
    >
  }
>() {}

export const ChainClientsLive = Layer.effect(
  ChainClients,
  Effect.gen(function* () {
    const endpoints = yield* ChainEndpoints
    // one client per configured node, behind one failover client per chain
    const byHost = yield* nodeHeadersConfig.pipe(Effect.orDie)
    const { network } = yield* AppConfig
    const budgets = yield* Effect.all({
      tron: nodeBudgetConfig("TRC20", network),
      bep20: nodeBudgetConfig("BEP20", network),
      solana: nodeBudgetConfig("SOLANA", network)
    }).pipe(Effect.orDie)
    const nodesOf = <R>(
      first: string,
      more: ReadonlyArray<string> | undefined,
      make: (url: string, headers: NodeHeaders) => Effect.Effect<ChainClient, never, R>
    ) =>
      Effect.forEach([first, ...(more ?? [])], (url) =>
        Effect.map(
          make(url, headersFor(byHost, url)),
          (client): ChainEndpoint => ({ label: endpointLabel(url), client })
        )
      )
    const tron = yield* nodesOf(endpoints.tron.url, endpoints.tron.fallbackUrls, (url, headers) =>
      makeTronClient({
        url,
        tokens: endpoints.tron.tokens,
        confirmations: endpoints.tron.confirmations,
        headers,
        budget: budgets.tron
      })
    )
    const bep20 = yield* nodesOf(endpoints.bep20.rpcUrl, endpoints.bep20.fallbackUrls, (rpcUrl, headers) =>
      makeBep20Client({
        rpcUrl,
        headers,
        budget: budgets.bep20,
        chainId: endpoints.bep20.chainId,
        tokens: endpoints.bep20.tokens,
        confirmations: endpoints.bep20.confirmations,
        traces: endpoints.bep20.traces,
        ...(endpoints.bep20.finality === undefined ? {} : { finality: endpoints.bep20.finality })
      })
    )
    const solana = yield* nodesOf(endpoints.solana.rpcUrl, endpoints.solana.fallbackUrls, (rpcUrl, headers) =>
      makeSolanaClient({ rpcUrl, tokens: endpoints.solana.tokens, headers, budget: budgets.solana })
    )
    const callTimeoutMs = yield* Config.integer("FACET_NODE_TIMEOUT_MS").pipe(Config.withDefault(30_000), Effect.orDie)
    const chains = yield* Effect.forEach([tron, bep20, solana], (nodes) =>
      isNonEmptyReadonlyArray(nodes)
        ? makeFailoverClient(nodes, { callTimeoutMs })
        : Effect.dieMessage("a chain without a node")
    )
    const clients: ReadonlyArray<ChainClient> = chains.map((c) => c.client)
    const nodes = Effect.map(
      Effect.forEach(chains, (c) => Effect.map(c.health, (endpoints) => ({ chain: c.client.chain, endpoints }))),
      (all) => all.filter((c) => c.endpoints.length > 0)
    )
    return { get: (chain) => Option.fromNullable(clients.find((c) => c.chain === chain)), all: clients, nodes }
  })
)
