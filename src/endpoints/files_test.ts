import assert from "node:assert/strict";
import { fileUrl, ownFileId } from "./files.ts";
import { newFileId } from "../blobs/mod.ts";

Deno.test("own file links are recognised on any known base, and nothing else is", () => {
  const id = newFileId();
  const bases = ["https://api.example.com/gw", "http://127.0.0.1:8787"];
  assert.equal(fileUrl(bases[0], id), `https://api.example.com/gw/v1/files/${id}`);
  assert.equal(ownFileId(fileUrl(bases[0], id), bases), id);
  assert.equal(ownFileId(fileUrl(bases[1], id) + "?x=1", bases), id);
  assert.equal(ownFileId(`https://evil.example/v1/files/${id}`, bases), undefined);
  assert.equal(ownFileId(`${bases[1]}/v1/files/../secret`, bases), undefined);
  assert.equal(ownFileId(`${bases[1]}/v1/files/file_short`, bases), undefined);
});
