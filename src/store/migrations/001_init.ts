// Generated from 001_init.sql (kept equal by migrations_test.ts): embedded so that no file
// is read at run time (Deno Deploy, compiled binaries).
export default `-- 001_init: accounts, keys, ledger, generations, blobs.
-- Money is bigint nano-roubles (1e-9 RUB). Ids are text made in code (acc_, key_, led_, gen_).
-- schema_migrations is created by the migrator itself, before any numbered file runs.

CREATE TABLE accounts (
  id text PRIMARY KEY,
  name text NOT NULL,
  balance bigint NOT NULL DEFAULT 0,
  -- Σ holds of running generations: balance - held is what a new request may reserve.
  held bigint NOT NULL DEFAULT 0 CHECK (held >= 0),
  default_model text,
  rpm_limit integer CHECK (rpm_limit >= 0),
  created timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
  id text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  prefix text NOT NULL,
  -- SHA-256 hex of the key; the key itself is never stored.
  key_hash text NOT NULL UNIQUE,
  label text,
  revoked_at timestamptz,
  rpm_limit integer CHECK (rpm_limit >= 0),
  spend_limit bigint CHECK (spend_limit >= 0),
  -- Σ settled costs through this key; checked against spend_limit at reserve.
  spent bigint NOT NULL DEFAULT 0,
  last_used timestamptz,
  created timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX api_keys_account ON api_keys (account_id, created);

CREATE TABLE generations (
  id text PRIMARY KEY,
  -- Insertion order: breaks ties between equal timestamps (PGlite's clock has 1 ms steps).
  seq bigint GENERATED ALWAYS AS IDENTITY,
  account_id text NOT NULL REFERENCES accounts (id),
  key_id text NOT NULL REFERENCES api_keys (id),
  endpoint text NOT NULL,
  model text NOT NULL,
  provider text,
  upstream_model text,
  stream boolean NOT NULL,
  status text NOT NULL
    CHECK (status IN ('running', 'completed', 'failed', 'cancelled', 'interrupted')),
  finish_reason text,
  input_tokens integer,
  output_tokens integer,
  cache_read_tokens integer,
  cache_write_tokens integer,
  reasoning_tokens integer,
  cost bigint NOT NULL DEFAULT 0 CHECK (cost >= 0),
  cost_details jsonb NOT NULL DEFAULT '{}',
  usage_source text CHECK (usage_source IN ('upstream', 'counted', 'none')),
  hold bigint NOT NULL CHECK (hold >= 0),
  latency_ms integer,
  ttft_ms integer,
  error text,
  created timestamptz NOT NULL DEFAULT now(),
  finished timestamptz
);
-- Listing newest first; the cursor is a generation id, resolved to its (created, seq).
CREATE INDEX generations_account ON generations (account_id, created DESC, seq DESC);
-- The sweeper: running generations older than a deadline.
CREATE INDEX generations_status ON generations (status, created);
-- Holds in flight per key, for the spend-cap check at reserve.
CREATE INDEX generations_key_running ON generations (key_id) WHERE status = 'running';

CREATE TABLE ledger (
  id text PRIMARY KEY,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  account_id text NOT NULL REFERENCES accounts (id),
  amount bigint NOT NULL,
  kind text NOT NULL CHECK (kind IN ('topup', 'debit', 'refund', 'adjustment')),
  -- At most one entry per generation: a retried settlement cannot debit twice.
  generation_id text UNIQUE REFERENCES generations (id),
  -- At most one entry per idempotency key: a repeated top-up cannot credit twice.
  idempotency_key text UNIQUE,
  created timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ledger_account ON ledger (account_id, created, seq);

CREATE TABLE blobs (
  id text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  content_type text NOT NULL,
  size bigint NOT NULL CHECK (size >= 0),
  storage_key text NOT NULL,
  created timestamptz NOT NULL DEFAULT now()
);
`;
