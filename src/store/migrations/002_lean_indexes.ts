// Generated from 002_lean_indexes.sql (kept equal by migrations_test.ts): embedded so that no file
// is read at run time (Deno Deploy, compiled binaries).
export default `-- 002_lean_indexes: the indexes that settled rows never need become partial, so the hot
-- inserts (a settled generation and its debit) maintain two index entries fewer each.

-- The sweeper looks only for running generations.
DROP INDEX generations_status;
CREATE INDEX generations_running ON generations (created) WHERE status = 'running';

-- Only top-ups carry an idempotency key; debits (one per generation) do not.
ALTER TABLE ledger DROP CONSTRAINT ledger_idempotency_key_key;
CREATE UNIQUE INDEX ledger_idempotency ON ledger (idempotency_key)
  WHERE idempotency_key IS NOT NULL;
`;
