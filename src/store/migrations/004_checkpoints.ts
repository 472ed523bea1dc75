// Generated from 004_checkpoints.sql (kept equal by migrations_test.ts): embedded so that no file
// is read at run time (Deno Deploy, compiled binaries).
export default `-- 004_checkpoints: generations whose holds live in a wallet's memory (embedded, or leased) are
-- journaled while in flight: a running row with hold 0, its cost so far checkpointed at
-- checkpoint_at, and the leasing instance that holds it in instance (null: the embedded
-- wallet). A row whose checkpoints stopped, or whose instance's leases expired, belongs to a
-- process that died; the sweeper settles it at its last checkpoint before that instance's
-- leases go back. Rows settled without a journal keep both null.
ALTER TABLE generations ADD COLUMN checkpoint_at timestamptz;
ALTER TABLE generations ADD COLUMN instance text;
`;
