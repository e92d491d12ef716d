-- TRON energy from staked TRX (custody/energy.ts). A TRC20 transfer by custody may be paid for with energy
-- lent from the platform's stake instead of burned TRX: the lending (energy_delegation) and the taking back
-- (energy_reclaim) are custody operations of their own, signed by the staking wallet and driven by the
-- actor of the wallet whose transfer they serve; an operator's stake and unstake, for energy or for the
-- staking wallet's own bandwidth (energy_stake, energy_unstake, bandwidth_stake, bandwidth_unstake), are the
-- platform's own, driven by the staking wallet's actor, with no merchant.
ALTER TABLE custody_operations DROP CONSTRAINT custody_operations_type_check;
ALTER TABLE custody_operations ADD CONSTRAINT custody_operations_type_check
  CHECK (type IN ('collection', 'gas_funding', 'withdrawal', 'account_close',
                  'energy_delegation', 'energy_reclaim', 'energy_stake', 'energy_unstake',
                  'bandwidth_stake', 'bandwidth_unstake'));
ALTER TABLE custody_operations ALTER COLUMN merchant_id DROP NOT NULL;
ALTER TABLE custody_operations ADD CONSTRAINT custody_operations_merchant_check
  CHECK (merchant_id IS NOT NULL OR type IN ('energy_stake', 'energy_unstake', 'bandwidth_stake', 'bandwidth_unstake'));
-- a TRC20 transfer names how its energy is paid for: lent from the stake (energy_id: the lending, once
-- reserved) or TRX burned (energy_reason: why no energy could be had); NULL until planned
ALTER TABLE custody_operations ADD COLUMN energy_id text REFERENCES custody_operations (id);
ALTER TABLE custody_operations ADD COLUMN energy_path text CHECK (energy_path IN ('delegated', 'burned'));
ALTER TABLE custody_operations ADD COLUMN energy_reason text;
-- a lending is taken back by one operation at a time, whatever finds it due (one that FAILED is tried again)
CREATE UNIQUE INDEX custody_operations_one_reclaim_idx ON custody_operations (parent_id)
  WHERE type = 'energy_reclaim' AND status <> 'FAILED';
-- a lending's taking back, once final (or once the chain shows nothing of it lent): what is still lent is
-- found without reading every lending ever made
ALTER TABLE custody_operations ADD COLUMN taken_back_at timestamptz;
CREATE INDEX custody_operations_lent_idx ON custody_operations (to_address)
  WHERE type = 'energy_delegation' AND status <> 'FAILED' AND taken_back_at IS NULL;
CREATE INDEX custody_operations_in_flight_lendings_idx ON custody_operations (created_at)
  WHERE type = 'energy_delegation' AND status NOT IN ('COMPLETED', 'FAILED');
-- whether custody ever funded a wallet (it exists on chain whatever a node says), asked on every plan
CREATE INDEX custody_operations_funded_idx ON custody_operations (to_wallet_id)
  WHERE type = 'gas_funding' AND status = 'COMPLETED';

-- The staking wallet, when it is not the TRON gas wallet itself (FACET_TRON_STAKING_INDEX): account 0 like it.
ALTER TABLE wallets DROP CONSTRAINT wallets_kind_check;
ALTER TABLE wallets ADD CONSTRAINT wallets_kind_check CHECK (kind IN ('main', 'receive', 'gas', 'staking'));
CREATE UNIQUE INDEX wallets_one_staking_idx ON wallets (network) WHERE kind = 'staking';
