// A third-party participant of an etcd election, written the way a user of the npm `etcd3`
// package would (its README's example): campaign, lead on 'elected', stop on 'error'.
// electop's tests start it to see what such a participant believes after an admin action.
// It prints one JSON line per change of belief:
//
//   {"t_ms":1700000000000,"id":"node-a","belief":"follower"|"leader"|"lost","detail":"..."}
//
// It notices only what the package lets it notice: the campaign's 'error' event, which the
// package emits when its lease is lost (a keep-alive, every third of the TTL, finds it gone).
// The package keeps its keys under `election/<name>/<lease id>`.
//
// usage: node campaign.js --endpoints 127.0.0.1:2379 --election NAME --id ID [--ttl S]
'use strict';

const { Etcd3 } = require('etcd3');

function args(argv) {
  const out = { endpoints: '127.0.0.1:2379', ttl: '60' };
  for (let i = 0; i + 1 < argv.length; i += 2) {
    out[argv[i].replace(/^--/, '')] = argv[i + 1];
  }
  if (!out.election || !out.id) {
    process.stderr.write('usage: campaign.js --endpoints E --election NAME --id ID [--ttl S]\n');
    process.exit(2);
  }
  return out;
}

function say(id, belief, detail) {
  process.stdout.write(JSON.stringify({ t_ms: Date.now(), id, belief, detail }) + '\n');
}

async function main() {
  const a = args(process.argv.slice(2));
  const client = new Etcd3({ hosts: a.endpoints.split(',').map(h => `http://${h}`) });
  const campaign = client.election(a.election, Number(a.ttl)).campaign(a.id);
  let over = false;
  const stop = async (code, detail) => {
    if (over) return;
    over = true;
    say(a.id, 'lost', detail);
    await campaign.resign().catch(() => undefined);
    client.close();
    process.exit(code);
  };
  campaign.on('elected', () => {
    if (!over) say(a.id, 'leader', 'elected');
  });
  campaign.on('error', err => stop(1, `campaign error: ${err.message || err}`));
  process.on('SIGINT', () => stop(0, 'resigned on signal'));
  process.on('SIGTERM', () => stop(0, 'resigned on signal'));
  const key = await campaign.getCampaignKey();
  say(a.id, 'follower', `campaigning as ${key}`);
}

main().catch(err => {
  say('?', 'lost', `failed: ${err.message || err}`);
  process.exit(1);
});
