import type { BlobStore } from "./store.ts";

/**
 * Blobs as files under one directory (default `DATA_DIR/blobs`), fanned out by two
 * characters of the key so no directory grows huge. Writes go to a temporary name first and
 * are renamed into place, so a reader never sees half a file.
 */
export class DiskBlobStore implements BlobStore {
  readonly kind = "disk";
  constructor(readonly dir: string) {}

  #path(key: string): string {
    if (!/^[A-Za-z0-9_-]{8,100}$/.test(key)) throw new Error("invalid blob key");
    return `${this.dir}/${key.slice(-2)}/${key}`;
  }

  async put(key: string, bytes: Uint8Array, _contentType: string): Promise<void> {
    const path = this.#path(key);
    const folder = path.slice(0, path.lastIndexOf("/"));
    await Deno.mkdir(folder, { recursive: true });
    const tmp = `${path}.${crypto.randomUUID()}.tmp`;
    try {
      await Deno.writeFile(tmp, bytes);
      await Deno.rename(tmp, path);
    } catch (e) {
      await Deno.remove(tmp).catch(() => {});
      throw e;
    }
  }

  async get(key: string): Promise<Uint8Array | null> {
    try {
      return await Deno.readFile(this.#path(key));
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return null;
      throw e;
    }
  }
}
