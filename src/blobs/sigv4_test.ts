/**
 * SigV4 against AWS's published vectors: the signature version 4 test suite (get-vanilla,
 * get-vanilla-query-order-key-case) and the S3 API reference's GET and PUT object examples.
 */
import assert from "node:assert/strict";
import { amzDate, EMPTY_SHA256, sha256Hex, signRequest, uriEncode } from "./sigv4.ts";

const SUITE = {
  credentials: {
    accessKeyId: "AKIDEXAMPLE",
    secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
  },
  region: "us-east-1",
  service: "service",
  now: new Date("2015-08-30T12:36:00Z"),
};

const S3_DOC = {
  credentials: {
    accessKeyId: "AKIAIOSFODNN7EXAMPLE",
    secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
  },
  region: "us-east-1",
  service: "s3",
  now: new Date("2013-05-24T00:00:00Z"),
};

Deno.test("sigv4: test suite get-vanilla", async () => {
  const s = await signRequest({
    ...SUITE,
    method: "GET",
    url: new URL("https://example.amazonaws.com/"),
    payloadHash: EMPTY_SHA256,
  });
  assert.equal(s.signature, "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
  assert.equal(
    s.headers.authorization,
    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, " +
      "SignedHeaders=host;x-amz-date, " +
      "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
  );
  assert.equal(s.headers["x-amz-date"], "20150830T123600Z");
});

Deno.test("sigv4: test suite get-vanilla-query-order-key-case sorts the query", async () => {
  const s = await signRequest({
    ...SUITE,
    method: "GET",
    url: new URL("https://example.amazonaws.com/?Param2=value2&Param1=value1"),
    payloadHash: EMPTY_SHA256,
  });
  assert.equal(s.signature, "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
});

Deno.test("sigv4: S3 reference GET object with a Range header", async () => {
  const s = await signRequest({
    ...S3_DOC,
    method: "GET",
    url: new URL("https://examplebucket.s3.amazonaws.com/test.txt"),
    headers: { Range: "bytes=0-9" },
    payloadHash: EMPTY_SHA256,
  });
  assert.equal(
    await sha256Hex(s.canonicalRequest),
    "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972",
  );
  assert.equal(s.signature, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  assert.match(
    s.headers.authorization,
    /SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,/,
  );
  assert.equal(s.headers["x-amz-content-sha256"], EMPTY_SHA256);
});

Deno.test("sigv4: S3 reference PUT object with an escaped key and a real payload", async () => {
  const body = new TextEncoder().encode("Welcome to Amazon S3.");
  const hash = await sha256Hex(body);
  assert.equal(hash, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  const s = await signRequest({
    ...S3_DOC,
    method: "PUT",
    url: new URL("https://examplebucket.s3.amazonaws.com/test$file.text"),
    headers: {
      Date: "Fri, 24 May 2013 00:00:00 GMT",
      "x-amz-storage-class": "REDUCED_REDUNDANCY",
    },
    payloadHash: hash,
  });
  assert.match(s.canonicalRequest, /^PUT\n\/test%24file\.text\n/);
  assert.equal(s.signature, "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
});

Deno.test("sigv4: helpers", () => {
  assert.equal(amzDate(new Date("2013-05-24T00:00:00.123Z")), "20130524T000000Z");
  assert.equal(uriEncode("a b*(c)~-_."), "a%20b%2A%28c%29~-_.");
  assert.equal(uriEncode("é"), "%C3%A9");
});

Deno.test("sigv4: a session token is signed", async () => {
  const s = await signRequest({
    ...SUITE,
    credentials: { ...SUITE.credentials, sessionToken: "tok" },
    method: "GET",
    url: new URL("https://example.amazonaws.com/"),
    payloadHash: EMPTY_SHA256,
  });
  assert.equal(s.headers["x-amz-security-token"], "tok");
  assert.match(s.headers.authorization, /SignedHeaders=host;x-amz-date;x-amz-security-token,/);
});
