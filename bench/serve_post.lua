-- wrk script for bench/serve.sh: POSTs the body of a file as JSON to the
-- URL wrk is given, and at the end prints one JSON line with what
-- serve.sh tabulates (latencies in microseconds).
--
-- Usage: wrk -t1 -c64 -d10s -s bench/serve_post.lua URL -- BODY.json

function init(args)
  if args[1] == nil then
    error("serve_post.lua: want the body file after --")
  end
  local f = assert(io.open(args[1], "rb"))
  wrk.body = f:read("*a")
  f:close()
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"rps":%.1f,"p50_us":%d,"p99_us":%d,"max_us":%d,' ..
    '"non2xx":%d,"connect_errors":%d,"read_errors":%d,"write_errors":%d,"timeouts":%d}\n',
    summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(99), latency.max,
    e.status, e.connect, e.read, e.write, e.timeout))
end
