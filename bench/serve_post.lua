-- wrk script for bench/serve.sh: POSTs the body of a file as JSON to the
-- URL wrk is given, and at the end prints one JSON line with what
-- serve.sh tabulates (latencies in microseconds).
--
-- Usage: wrk -t1 -c64 -d10s -s bench/serve_post.lua URL -- BODY.json
--        wrk ... -s bench/serve_post.lua URL -- BODY.bin HEADER_LENGTH
-- The second form sends a body in Triton's binary-data extension, whose
-- JSON header is HEADER_LENGTH bytes long.

function init(args)
  if args[1] == nil then
    error("serve_post.lua: want the body file after --")
  end
  local f = assert(io.open(args[1], "rb"))
  wrk.body = f:read("*a")
  f:close()
  wrk.method = "POST"
  if args[2] == nil then
    wrk.headers["Content-Type"] = "application/json"
  else
    wrk.headers["Content-Type"] = "application/octet-stream"
    wrk.headers["Inference-Header-Content-Length"] = args[2]
  end
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
