/**
 * DATA_DIR and the embedded database in it are made readable by their owner alone, whatever
 * the umask: they hold key hashes, balances, every generation, and the operator token.
 */
export const DATA_DIR_MODE = 0o700;
