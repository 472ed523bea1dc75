/**
 * Where the bytes of stored files live. The metadata (owner, content type, size, storage
 * key) is a row in the main store (`Store.putBlob`/`getBlob`); this is only the bytes.
 */
export interface BlobStore {
  readonly kind: string;
  put(key: string, bytes: Uint8Array, contentType: string): Promise<void>;
  /** The bytes, or null when no such object exists. */
  get(key: string): Promise<Uint8Array | null>;
}
