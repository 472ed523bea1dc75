import assert from "node:assert/strict";
import {
  FetchFailedError,
  isPublicIp,
  parseIp,
  parseIPv4,
  parseIPv6,
  safeFetch,
  UnsafeUrlError,
} from "./safe_fetch.ts";

/** A fake resolver: names → addresses; anything else does not resolve. */
function fakeDns(table: Record<string, string[]>) {
  return (host: string) => Promise.resolve(table[host] ?? []);
}

const DNS = fakeDns({
  "public.example": ["93.184.216.34"],
  "public6.example": ["2606:2800:220:1:248:1893:25c8:1946"],
  "metadata.google.internal": ["169.254.169.254"],
  "rebind.example": ["93.184.216.34", "10.0.0.5"],
  "private6.example": ["fd12:3456::1"],
  "mapped.example": ["::ffff:127.0.0.1"],
});

const HOSTILE: string[] = [
  // schemes and shapes
  "file:///etc/passwd",
  "ftp://public.example/x.png",
  "gopher://public.example:70/_x",
  "data:image/png;base64,AAAA",
  "javascript:alert(1)",
  "http://user:pass@public.example/x.png",
  "not a url",
  // loopback, in every numeric spelling
  "http://127.0.0.1/",
  "http://127.1/",
  "http://2130706433/",
  "http://0x7f000001/",
  "http://0x7f.0.0.1/",
  "http://0177.0.0.1/",
  "http://017700000001/",
  "http://127.000.000.001/",
  "http://localhost/",
  "http://LOCALHOST./",
  "http://foo.localhost/",
  "http://[::1]/",
  "http://[0:0:0:0:0:0:0:1]/",
  "http://[::ffff:127.0.0.1]/",
  "http://[::ffff:7f00:1]/",
  // unspecified
  "http://0.0.0.0/",
  "http://0/",
  "http://[::]/",
  // private, CGNAT, link-local, metadata
  "http://10.0.0.1/",
  "http://172.16.5.4/",
  "http://172.31.255.255/",
  "http://192.168.1.1/",
  "http://100.64.0.1/",
  "http://100.127.255.254/",
  "http://169.254.169.254/latest/meta-data/",
  "http://2852039166/",
  "http://0xa9fea9fe/",
  "http://[::ffff:169.254.169.254]/",
  "http://[::ffff:a9fe:a9fe]/",
  "http://[fd00:ec2::254]/",
  "http://[fe80::1]/",
  "http://[fe80::1%25eth0]/",
  "http://[fc00::1]/",
  "http://metadata.google.internal/computeMetadata/v1/",
  // multicast, broadcast, reserved, documentation
  "http://224.0.0.1/",
  "http://239.255.255.250/",
  "http://255.255.255.255/",
  "http://240.0.0.1/",
  "http://192.0.2.1/",
  "http://[ff02::1]/",
  "http://[2001:db8::1]/",
  // IPv4 smuggled in IPv6 transition forms
  "http://[64:ff9b::7f00:1]/",
  "http://[64:ff9b::a9fe:a9fe]/",
  "http://[2002:7f00:1::1]/",
  "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
  "http://[::127.0.0.1]/",
  // names that resolve badly
  "http://rebind.example/",
  "http://private6.example/",
  "http://mapped.example/",
];

for (const url of HOSTILE) {
  Deno.test(`safeFetch refuses ${url}`, async () => {
    await assert.rejects(
      safeFetch(url, { maxBytes: 1000, timeoutMs: 2000, resolve: DNS }),
      (e) => e instanceof UnsafeUrlError,
    );
  });
}

Deno.test("parseIPv4 reads every inet_aton spelling", () => {
  const loop = 0x7f000001;
  for (const s of ["127.0.0.1", "127.1", "127.0.1", "2130706433", "0x7f000001", "0177.0.0.1"]) {
    assert.equal(parseIPv4(s), loop, s);
  }
  assert.equal(parseIPv4("256.0.0.1"), undefined);
  assert.equal(parseIPv4("1.2.3.4.5"), undefined);
  assert.equal(parseIPv4("example.com"), undefined);
  assert.equal(parseIPv4("08.0.0.1"), undefined);
});

Deno.test("parseIPv6 expands :: and dotted tails", () => {
  assert.deepEqual(parseIPv6("::1"), [0, 0, 0, 0, 0, 0, 0, 1]);
  assert.deepEqual(parseIPv6("::ffff:1.2.3.4"), [0, 0, 0, 0, 0, 0xffff, 0x0102, 0x0304]);
  assert.deepEqual(parseIPv6("fd00:ec2::254"), [0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254]);
  assert.equal(parseIPv6("1::2::3"), undefined);
  assert.equal(parseIPv6("1:2:3:4:5:6:7:8:9"), undefined);
  assert.equal(parseIPv6("12345::"), undefined);
});

Deno.test("public addresses pass the address check", () => {
  for (const s of ["93.184.216.34", "8.8.8.8", "1.1.1.1", "2606:4700::1111", "::ffff:8.8.8.8"]) {
    assert.equal(isPublicIp(parseIp(s)!), true, s);
  }
  for (const s of ["100.63.255.255", "172.32.0.1", "11.0.0.1"]) {
    assert.equal(isPublicIp(parseIp(s)!), true, s);
  }
});

/** A local server; tests reach it through `allowHosts`, the test-only exemption. */
function serve(handler: (req: Request, base: string) => Response | Promise<Response>) {
  let base = "";
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    (req) => handler(req, base),
  );
  base = `http://127.0.0.1:${server.addr.port}`;
  return { base, host: `127.0.0.1:${server.addr.port}`, close: () => server.shutdown() };
}

Deno.test("safeFetch fetches an allowed host and reports the content type", async () => {
  const s = serve(() =>
    new Response(new Uint8Array([1, 2, 3]), { headers: { "content-type": "image/png" } })
  );
  try {
    const r = await safeFetch(`${s.base}/a.png`, {
      maxBytes: 10,
      timeoutMs: 2000,
      allowHosts: [s.host],
    });
    assert.deepEqual([...r.bytes], [1, 2, 3]);
    assert.equal(r.contentType, "image/png");
  } finally {
    await s.close();
  }
});

Deno.test("safeFetch without the exemption refuses the same local server", async () => {
  const s = serve(() => new Response("x"));
  try {
    await assert.rejects(
      safeFetch(`${s.base}/`, { maxBytes: 10, timeoutMs: 2000 }),
      UnsafeUrlError,
    );
  } finally {
    await s.close();
  }
});

Deno.test("safeFetch re-checks every redirect hop", async () => {
  const s = serve((req, base) => {
    const path = new URL(req.url).pathname;
    if (path === "/to-metadata") {
      return Response.redirect("http://169.254.169.254/latest/meta-data/", 302);
    }
    if (path === "/to-loopback-decimal") return Response.redirect("http://2130706433/", 301);
    if (path === "/relative") {
      return new Response(null, { status: 307, headers: { location: "/ok" } });
    }
    if (path === "/ok") return new Response("fine");
    if (path.startsWith("/loop")) {
      const n = Number(path.slice(5) || "0");
      return Response.redirect(`${base}/loop${n + 1}`, 302);
    }
    return new Response("no", { status: 404 });
  });
  const opts = { maxBytes: 100, timeoutMs: 2000, allowHosts: [s.host] };
  try {
    await assert.rejects(safeFetch(`${s.base}/to-metadata`, opts), UnsafeUrlError);
    await assert.rejects(safeFetch(`${s.base}/to-loopback-decimal`, opts), UnsafeUrlError);
    const ok = await safeFetch(`${s.base}/relative`, opts);
    assert.equal(new TextDecoder().decode(ok.bytes), "fine");
    assert.equal(ok.url, `${s.base}/ok`);
    await assert.rejects(safeFetch(`${s.base}/loop`, opts), /more than 3 redirects/);
    await assert.rejects(safeFetch(`${s.base}/missing`, opts), FetchFailedError);
  } finally {
    await s.close();
  }
});

Deno.test("safeFetch caps the size, declared or streamed", async () => {
  const s = serve((req) => {
    if (new URL(req.url).pathname === "/declared") return new Response(new Uint8Array(5000));
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < 10; i++) c.enqueue(new Uint8Array(1000));
        c.close();
      },
    });
    return new Response(body);
  });
  const opts = { maxBytes: 2048, timeoutMs: 2000, allowHosts: [s.host] };
  try {
    await assert.rejects(safeFetch(`${s.base}/declared`, opts), /larger than 2048 bytes/);
    await assert.rejects(safeFetch(`${s.base}/streamed`, opts), /larger than 2048 bytes/);
  } finally {
    await s.close();
  }
});

Deno.test("safeFetch caps the time", async () => {
  const s = serve(() =>
    new Promise<Response>((resolve) => setTimeout(() => resolve(new Response("late")), 500))
  );
  try {
    await assert.rejects(
      safeFetch(`${s.base}/slow`, { maxBytes: 100, timeoutMs: 100, allowHosts: [s.host] }),
      /within 100 ms/,
    );
  } finally {
    await s.close();
  }
});

Deno.test("safeFetch judges names by what they resolve to", async () => {
  // A name that resolves to a public address passes the check; the fetch itself then fails
  // (the .invalid name does not exist for fetch's own resolver) — a fetch failure, not a refusal.
  await assert.rejects(
    safeFetch("http://public.invalid/x.png", {
      maxBytes: 100,
      timeoutMs: 2000,
      resolve: fakeDns({ "public.invalid": ["93.184.216.34"] }),
    }),
    FetchFailedError,
  );
  await assert.rejects(
    safeFetch("http://doc.invalid/x.png", {
      maxBytes: 100,
      timeoutMs: 2000,
      resolve: fakeDns({ "doc.invalid": ["192.0.2.1"] }),
    }),
    UnsafeUrlError,
  );
  await assert.rejects(
    safeFetch("http://nowhere.example/", { maxBytes: 100, timeoutMs: 500, resolve: DNS }),
    /does not resolve/,
  );
});
