// A third-party holder of a Redis leader lock, written the way a user of npm `redlock` 4 on
// `ioredis` writes one against a single instance: `redlock.lock(resource, ttl)`, then
// `lock.extend(ttl)` every third of the TTL while leading. electop's tests start it to see
// what such a holder believes. One JSON line per change of belief, its token in `detail`:
//
//   {"t_ms":1700000000000,"id":"node-a","belief":"follower"|"leader"|"lost","detail":"<token>"}
//
// usage: node redlock.js --port 6379 --name leader:jobs --id ID [--ttl-ms 3000]
'use strict';

const Redis = require('ioredis');
const Redlock = require('redlock');

function args(argv) {
  const out = { host: '127.0.0.1', port: '6379', 'ttl-ms': '3000' };
  for (let i = 0; i + 1 < argv.length; i += 2) {
    out[argv[i].replace(/^--/, '')] = argv[i + 1];
  }
  if (!out.name || !out.id) {
    process.stderr.write('usage: redlock.js --port P --name KEY --id ID [--ttl-ms MS]\n');
    process.exit(2);
  }
  return out;
}

function say(id, belief, detail) {
  process.stdout.write(JSON.stringify({ t_ms: Date.now(), id, belief, detail }) + '\n');
}

const sleep = ms => new Promise(r => setTimeout(r, ms));

async function main() {
  const a = args(process.argv.slice(2));
  const ttl = Number(a['ttl-ms']);
  const client = new Redis({ host: a.host, port: Number(a.port), password: process.env.REDIS_PASSWORD });
  const redlock = new Redlock([client], { retryCount: 0 });
  redlock.on('clientError', () => undefined);
  say(a.id, 'follower', `campaigning with redlock on ${a.name}`);
  for (;;) {
    let lock;
    try {
      lock = await redlock.lock(a.name, ttl);
    } catch (e) {
      await sleep(100);
      continue;
    }
    say(a.id, 'leader', lock.value);
    try {
      for (;;) {
        await sleep(ttl / 3);
        lock = await lock.extend(ttl);
      }
    } catch (e) {
      say(a.id, 'lost', `${lock.value}: ${e.message || e}`);
    }
  }
}

main();
