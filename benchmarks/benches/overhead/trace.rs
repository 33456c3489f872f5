//! The interleaved run, and the commands each side sends.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bson::{Bson, Document};
use mongodb::event::command::CommandEvent;
use mongodb::options::ClientOptions;

use crate::bench::Bench;
use crate::op::{Op, Side};
use crate::TRACED;

type Traced = Vec<(String, Document)>;

/// Which commands the client sends, recorded only while `recording` (the driver's command
/// monitoring): name and body, the session and cluster-time fields left out.
#[derive(Clone, Default)]
pub(crate) struct Trace(Arc<Mutex<Option<Traced>>>);

impl Trace {
    fn start(&self) {
        *self.0.lock().unwrap() = Some(Vec::new());
    }
    fn stop(&self) -> Vec<(String, Document)> {
        self.0.lock().unwrap().take().unwrap_or_default()
    }
    /// Has the client of `opts` report to this trace (the shared command monitor: handshakes
    /// and monitoring aside).
    pub(crate) fn install(&self, opts: &mut ClientOptions) {
        let sink = self.clone();
        pattern_tests::monitor(opts, move |ev| {
            let CommandEvent::Started(s) = ev else { return };
            let mut log = sink.0.lock().unwrap();
            let Some(log) = log.as_mut() else { return };
            let mut body = s.command.clone();
            for k in [
                "lsid",
                "$db",
                "$clusterTime",
                "txnNumber",
                "$readPreference",
            ] {
                body.remove(k);
            }
            log.push((s.command_name.clone(), body));
        });
    }
}

/// A short rendering of a command: arrays of more than 4 elements cut to their first two.
fn abbreviate(b: &Bson) -> Bson {
    match b {
        Bson::Document(d) => {
            Bson::Document(d.iter().map(|(k, v)| (k.clone(), abbreviate(v))).collect())
        }
        Bson::Array(a) if a.len() > 4 => Bson::Array(vec![
            abbreviate(&a[0]),
            abbreviate(&a[1]),
            Bson::String(format!("...{} more", a.len() - 2)),
        ]),
        Bson::Array(a) => Bson::Array(a.iter().map(abbreviate).collect()),
        other => other.clone(),
    }
}

fn median(mut v: Vec<Duration>) -> Option<Duration> {
    v.sort();
    let m = v.len();
    (m > 0).then(|| (v[(m - 1) / 2] + v[m / 2]) / 2)
}

impl Bench {
    /// `n` operations, library and driver alternating (which goes first alternates too), each
    /// timed alone: the median of each side's single operations.
    pub(crate) async fn interleaved(&self, op: Op, n: u64) -> (Duration, Duration) {
        let lib_batch = self.prepare(op, Side::Library, n).await;
        let drv_batch = self.prepare(op, Side::Driver, n).await;
        let (mut lib, mut drv) = (Vec::new(), Vec::new());
        for i in 0..n {
            for side in if i % 2 == 0 {
                [Side::Library, Side::Driver]
            } else {
                [Side::Driver, Side::Library]
            } {
                let batch = if side == Side::Library {
                    &lib_batch
                } else {
                    &drv_batch
                };
                let t = Instant::now();
                self.run(op, side, batch, i).await;
                let took = t.elapsed();
                if side == Side::Library {
                    lib.push(took)
                } else {
                    drv.push(took)
                }
            }
        }
        self.cleanup(op, Side::Library, &lib_batch).await;
        self.cleanup(op, Side::Driver, &drv_batch).await;
        (median(lib).unwrap(), median(drv).unwrap())
    }

    /// The commands `TRACED` operations send, by name, with one example body of each.
    pub(crate) async fn trace(&self, trace: &Trace, op: Op, side: Side) -> String {
        let batch = self.prepare(op, side, TRACED).await;
        trace.start();
        for i in 0..TRACED {
            self.run(op, side, &batch, i).await;
        }
        let log = trace.stop();
        self.cleanup(op, side, &batch).await;
        let mut by_name: BTreeMap<String, (usize, Document)> = BTreeMap::new();
        for (name, body) in log {
            let coll = body.get_str(&name).unwrap_or_default().to_owned();
            by_name
                .entry(format!("{name} {coll}"))
                .or_insert((0, body))
                .0 += 1;
        }
        let mut out = String::new();
        for (name, (count, body)) in by_name {
            let body = abbreviate(&Bson::Document(body));
            out += &format!("    {count:>3} x {name}  e.g. {body}\n");
        }
        out
    }
}
