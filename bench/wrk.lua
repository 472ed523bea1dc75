-- wrk script for bench/run.ts: POSTs the JSON body in $BENCH_BODY_FILE with the extra
-- headers in $BENCH_HEADERS ("name: value" lines), and prints one machine-readable line.
local f = assert(io.open(os.getenv("BENCH_BODY_FILE"), "rb"))
local body = f:read("*a")
f:close()

wrk.method = "POST"
wrk.body = body
wrk.headers["Content-Type"] = "application/json"
for line in (os.getenv("BENCH_HEADERS") or ""):gmatch("[^\n]+") do
  local k, v = line:match("^([^:]+):%s*(.-)%s*$")
  if k then wrk.headers[k] = v end
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRKRESULT {"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,' ..
    '"status":%d,"timeout":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"mean_us":%.1f,"max_us":%d}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.mean,
    latency.max))
end
