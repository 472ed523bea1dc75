import assert from "node:assert/strict";
import {
  blobStoreFromConfig,
  DiskBlobStore,
  FILE_ID,
  newFileId,
  parseS3Url,
  S3BlobStore,
  unsharedBlobsWarning,
} from "./mod.ts";
import { signRequest } from "./sigv4.ts";

const noEnv = () => undefined;

Deno.test("file ids are 144-bit, unguessable and match FILE_ID", () => {
  const a = newFileId();
  const b = newFileId();
  assert.notEqual(a, b);
  assert.match(a, FILE_ID);
  assert.equal(a.length, "file_".length + 25);
});

Deno.test("disk store: put, get, missing, bad key", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const s = new DiskBlobStore(`${dir}/blobs`);
    const id = newFileId();
    await s.put(id, new Uint8Array([1, 2, 3]), "image/png");
    assert.deepEqual([...(await s.get(id))!], [1, 2, 3]);
    assert.equal(await s.get(newFileId()), null);
    await assert.rejects(s.get("../../etc/passwd"), /invalid blob key/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("on PostgreSQL without BLOB_URL, start-up warns that file links stay on one instance", () => {
  const db = "postgres://u@db/tollgate";
  const warning = unsharedBlobsWarning({ DATA_DIR: "/srv/data/", DATABASE_URL: db });
  assert.match(warning ?? "", /BLOB_URL is unset/);
  assert.match(warning ?? "", /\/srv\/data\/blobs of this instance alone/);
  assert.equal(
    unsharedBlobsWarning({ DATA_DIR: "x", DATABASE_URL: db, BLOB_URL: "/shared" }),
    undefined,
  );
  // The embedded store is one process: its disk is every instance's disk.
  assert.equal(unsharedBlobsWarning({ DATA_DIR: "x" }), undefined);
});

Deno.test("BLOB_URL selects the store", () => {
  const d = blobStoreFromConfig({ DATA_DIR: "/srv/data/" }, noEnv);
  assert.ok(d instanceof DiskBlobStore && d.dir === "/srv/data/blobs");
  const f = blobStoreFromConfig({ DATA_DIR: "x", BLOB_URL: "file:///var/blobs" }, noEnv);
  assert.ok(f instanceof DiskBlobStore && f.dir === "/var/blobs");
  const p = blobStoreFromConfig({ DATA_DIR: "x", BLOB_URL: "./b/" }, noEnv);
  assert.ok(p instanceof DiskBlobStore && p.dir === "./b");
  const s = blobStoreFromConfig({
    DATA_DIR: "x",
    BLOB_URL: "s3://AK:SK@my-bucket?endpoint=http://minio:9000&region=eu-1&prefix=img",
  }, noEnv);
  assert.ok(s instanceof S3BlobStore);
  assert.deepEqual(s.cfg, {
    endpoint: "http://minio:9000",
    region: "eu-1",
    bucket: "my-bucket",
    prefix: "img/",
    credentials: { accessKeyId: "AK", secretAccessKey: "SK", sessionToken: undefined },
  });
  assert.throws(() => blobStoreFromConfig({ DATA_DIR: "x", BLOB_URL: "ftp://x/y" }, noEnv));
});

Deno.test("s3 URL: credentials from the environment, defaults for region and endpoint", () => {
  const env = (n: string) =>
    ({ AWS_ACCESS_KEY_ID: "A", AWS_SECRET_ACCESS_KEY: "S", AWS_SESSION_TOKEN: "T" })[n];
  const c = parseS3Url("s3://bucket1", env);
  assert.equal(c.endpoint, "https://s3.us-east-1.amazonaws.com");
  assert.equal(c.prefix, "");
  assert.deepEqual(c.credentials, { accessKeyId: "A", secretAccessKey: "S", sessionToken: "T" });
  assert.throws(() => parseS3Url("s3://bucket1", noEnv), /credentials missing/);
  assert.throws(() => parseS3Url("s3://A:B@xyz?endpoint=ftp://q", noEnv), /endpoint/);
});

/** A tiny S3: checks each request's signature by signing it again, keeps objects in a map. */
function fakeS3(secret: string) {
  const objects = new Map<string, { bytes: Uint8Array; type: string }>();
  let rejected = 0;
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (req) => {
    const url = new URL(req.url);
    const body = new Uint8Array(await req.arrayBuffer());
    const auth = req.headers.get("authorization") ?? "";
    const signedNames = /SignedHeaders=([^,]+)/.exec(auth)?.[1].split(";") ?? [];
    const headers: Record<string, string> = {};
    for (const n of signedNames) if (n !== "x-amz-date") headers[n] = req.headers.get(n) ?? "";
    const date = req.headers.get("x-amz-date") ?? "";
    const now = new Date(
      `${date.slice(0, 4)}-${date.slice(4, 6)}-${date.slice(6, 8)}T${date.slice(9, 11)}:` +
        `${date.slice(11, 13)}:${date.slice(13, 15)}Z`,
    );
    const again = await signRequest({
      method: req.method,
      url,
      headers,
      payloadHash: req.headers.get("x-amz-content-sha256") ?? "",
      region: "eu-1",
      service: "s3",
      credentials: { accessKeyId: "AK", secretAccessKey: secret },
      now,
    });
    if (again.headers.authorization !== auth) {
      rejected++;
      return new Response("SignatureDoesNotMatch", { status: 403 });
    }
    if (req.method === "PUT") {
      objects.set(url.pathname, { bytes: body, type: req.headers.get("content-type") ?? "" });
      return new Response(null, { status: 200 });
    }
    const o = objects.get(url.pathname);
    return o ? new Response(o.bytes as BodyInit) : new Response("NoSuchKey", { status: 404 });
  });
  return {
    endpoint: `http://127.0.0.1:${server.addr.port}`,
    objects,
    rejected: () => rejected,
    close: () => server.shutdown(),
  };
}

Deno.test("s3 store: signed put and get round-trip against a signature-checking server", async () => {
  const s3 = fakeS3("SECRET");
  try {
    const store = new S3BlobStore({
      endpoint: s3.endpoint,
      region: "eu-1",
      bucket: "bkt",
      prefix: "img/",
      credentials: { accessKeyId: "AK", secretAccessKey: "SECRET" },
    });
    const id = newFileId();
    const bytes = crypto.getRandomValues(new Uint8Array(5000));
    await store.put(id, bytes, "image/png");
    assert.equal(s3.objects.get(`/bkt/img/${id}`)?.type, "image/png");
    assert.deepEqual(await store.get(id), bytes);
    assert.equal(await store.get(newFileId()), null);
    assert.equal(s3.rejected(), 0);

    const wrong = new S3BlobStore({
      ...store.cfg,
      credentials: { accessKeyId: "AK", secretAccessKey: "nope" },
    });
    await assert.rejects(wrong.put(newFileId(), bytes, "image/png"), /HTTP 403/);
    assert.equal(s3.rejected(), 1);
  } finally {
    await s3.close();
  }
});
