// Times cases in just-bash: reads [{name, setup, script, iters, fresh}] as JSON on stdin,
// prints {name: seconds_per_iteration} as JSON. Installed by benchmarks/peers.py via npm.
import { readFileSync } from "node:fs";
import { Bash } from "just-bash";

const cases = JSON.parse(readFileSync(0, "utf8"));
const out = {};
for (const c of cases) {
  try {
    let total = 0;
    for (let i = 0; i < c.iters; i++) {
      const t0 = process.hrtime.bigint();
      const b = new Bash();
      if (c.fresh) { total += Number(process.hrtime.bigint() - t0) / 1e9; continue; }
      if (c.setup) await b.exec(c.setup);
      const t1 = process.hrtime.bigint();
      const r = await b.exec(c.script);
      total += Number(process.hrtime.bigint() - t1) / 1e9;
      if (c.expect !== undefined && r.stdout !== c.expect) { out[c.name] = "wrong output: " + JSON.stringify(r.stdout.slice(0, 80)); total = NaN; break; }
    }
    if (out[c.name] === undefined) out[c.name] = total / c.iters;
  } catch (e) { out[c.name] = "error: " + String(e).slice(0, 100); }
}
process.stdout.write(JSON.stringify(out));
