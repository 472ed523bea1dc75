-- 003_leases: balance an instance has taken so it can admit requests from memory (design §10).
-- A lease's amount is part of its account's held, so no other instance (nor a reserve in the
-- store) can commit it twice; what the instance's requests cost is debited from the balance and
-- from the lease together. A lease not renewed by its expiry belongs to an instance that
-- stopped without returning it: the sweeper gives it back to the account.
CREATE TABLE leases (
  instance text NOT NULL,
  account_id text NOT NULL REFERENCES accounts (id),
  amount bigint NOT NULL CHECK (amount >= 0),
  expires timestamptz NOT NULL,
  PRIMARY KEY (instance, account_id)
);
CREATE INDEX leases_expires ON leases (expires);
CREATE INDEX leases_account ON leases (account_id);
