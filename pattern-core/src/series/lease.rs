//! A lease on a collection's width (`series::width`): a range read without a span scans the
//! `_id` range of the width it knows and reads the mark in the same command, to learn whether a
//! push widened the collection meanwhile. Where the mark holds a lease (`width_lease`,
//! milliseconds; set by [`lease_width`](crate::bucket::lease_width)), a read may skip the mark
//! for a while, and writers wait instead:
//!
//! - **A reader** that read the mark and found its width covering its scan trusts that width
//!   for nine tenths of the lease, counted from before it sent that read. A read inside that
//!   time scans the `_id` range alone (one `find`), and counts only when its reply arrives
//!   inside it too; otherwise it is sent again with the mark.
//! - **A writer** whose push relies on a width (joins a bucket within it, or raised it) returns
//!   only once its process has known that width for a whole lease: by then no reader trusts a
//!   narrower one, since each learned its own before the mark was raised past it. A process
//!   learns the lease with the width, from the same mark document, so a lease set while it runs
//!   binds its next width. Its first such push waits out the lease (it cannot tell how long ago
//!   the mark reached the width it read), and so does every push that widens the collection;
//!   later pushes within a width it has held that long wait for nothing.
//! - **Forgetting the width** (`adopt`, whose buckets keep to none) waits out the lease after the
//!   mark loses it, before the first bucket past it is written.
//!
//! What it assumes: the processes' clocks run at rates within a tenth of each other (the
//! share a reader gives up). A reader's trust holds only while both its monotonic clock and its
//! wall clock say it does, so a machine that slept (whose monotonic clock stops) or a wall clock
//! set back ends it. The waits need a Tokio runtime with its timer. A program of a version
//! without leases writes without waiting: the lease is for collections every writer of which
//! knows it. The follower's width raise for another program's writes (`width::cover_buckets`)
//! does not wait: a leased reader sees those buckets within a lease of its commit.

use std::time::{Duration, Instant, SystemTime};

use bson::{Bson, Document};

use super::memo::{memo, BoundsMark, Lease, Trust, Width};
use crate::codec::as_int;
use crate::spec::BOUNDED_COLLECTIONS;
use crate::store::query::{Filter, Update};
use crate::store::Store;

/// The mark's field holding the lease, in milliseconds.
pub(crate) const LEASE_FIELD: &str = "width_lease";

/// The longest lease: a push that widens the collection waits that long.
pub(crate) const MAX_LEASE_MS: i64 = 60_000;

/// The lease a mark document holds, in milliseconds (0: none; any number type, by value).
pub(crate) fn of_mark(mark: &Document) -> i64 {
    (mark.get(LEASE_FIELD).and_then(as_int)).map_or(0, |ms| ms.clamp(0, MAX_LEASE_MS))
}

/// When a read was sent, by both clocks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sent {
    at: Instant,
    wall: SystemTime,
}

impl Sent {
    pub(crate) fn now() -> Sent {
        Sent {
            at: Instant::now(),
            wall: SystemTime::now(),
        }
    }
}

impl Trust {
    /// The trust a read sent at `sent` gives under a lease of `lease_ms`: nine tenths of it, by
    /// both clocks (`None`: no lease).
    fn after(sent: Sent, lease_ms: i64) -> Option<Trust> {
        let share = Duration::from_millis(u64::try_from(lease_ms).ok()?) * 9 / 10;
        (!share.is_zero()).then(|| Trust {
            until: sent.at + share,
            wall_from: sent.wall,
            wall_for: share,
        })
    }

    /// Whether it holds now.
    pub(crate) fn holds(&self) -> bool {
        let wall = SystemTime::now().duration_since(self.wall_from);
        Instant::now() < self.until && wall.is_ok_and(|d| d < self.wall_for)
    }
}

/// The trust a range read of `coll` may scan by without reading the mark, when it holds now.
pub(crate) fn trusted<S: Store>(store: &S, coll: &str) -> Option<Trust> {
    let mark = memo(store).bounds_mark(coll)?;
    mark.lease.trusted.filter(Trust::holds)
}

/// After a read sent at `sent` whose mark (holding `lease_ms`) found the width it scanned by
/// covering every push: reads of `coll` may trust this process's width for a while.
pub(crate) fn trust<S: Store>(store: &S, coll: &str, sent: Sent, lease_ms: i64) {
    memo(store).change_bounds_mark(coll, |m| BoundsMark {
        lease: Lease {
            ms: m.lease.ms.max(lease_ms),
            trusted: Trust::after(sent, lease_ms),
            ..m.lease
        },
        ..m
    });
}

/// Remembers that `coll`'s mark held `lease_ms` when this process learned its width (a lease
/// only grows).
pub(crate) fn learned<S: Store>(store: &S, coll: &str, lease_ms: i64) {
    memo(store).change_bounds_mark(coll, |m| BoundsMark {
        lease: Lease {
            ms: m.lease.ms.max(lease_ms),
            ..m.lease
        },
        ..m
    });
}

/// Waits, where `coll`'s width is leased, until this process has known a width covering `width`
/// for a whole lease: a push that relies on `width` returns after it. At once when there is no
/// lease or the width is settled. The width this process holds now is known from when it
/// learned it; should it grow meanwhile, the wait stays that one (`width` was known before).
pub(crate) async fn settle<S: Store>(store: &S, coll: &str, width: Width) {
    let Some(mark) = memo(store).bounds_mark(coll) else {
        return;
    };
    let lease = mark.lease;
    if lease.ms <= 0 || lease.settled.covers(width) {
        return;
    }
    let since = lease.width_since.unwrap_or_else(Instant::now);
    let due = since + Duration::from_millis(lease.ms as u64);
    let now = Instant::now();
    if now < due {
        tokio::time::sleep(due - now).await;
    }
    let held = mark.width.unwrap_or_default().max(width);
    memo(store).change_bounds_mark(coll, |m| BoundsMark {
        lease: Lease {
            settled: m.lease.settled.max(held),
            ..m.lease
        },
        ..m
    });
}

/// Raises `coll`'s lease to at least `ms` (one write; the mark keeps the larger), and remembers
/// it.
pub(crate) async fn set<S: Store>(store: &S, coll: &str, ms: i64) -> crate::Result<()> {
    let mut update = Update::default();
    update.max.push((LEASE_FIELD.into(), Bson::Int64(ms)));
    let mark = Filter::Eq("_id".into(), Bson::String(coll.into()));
    (store.update_one(BOUNDED_COLLECTIONS, &mark, &mut update, false)).await?;
    learned(store, coll, ms);
    Ok(())
}

/// Waits out a lease of `lease_ms` (after the mark lost its width: no reader trusts it once
/// this returns).
pub(crate) async fn wait_out(lease_ms: i64) {
    if lease_ms > 0 {
        tokio::time::sleep(Duration::from_millis(lease_ms as u64)).await;
    }
}

#[cfg(test)]
mod tests {
    /// A mark's lease read as MongoDB compares numbers: another program may have written it as
    /// an Int32 or a whole Double; what is not a whole number of milliseconds is no lease, and
    /// one past the longest is the longest.
    #[test]
    fn a_lease_written_in_another_number_type_reads_alike() {
        let of = |v: bson::Bson| super::of_mark(&bson::doc! {"width_lease": v});
        assert_eq!(of(bson::Bson::Int32(1_000)), 1_000);
        assert_eq!(of(bson::Bson::Int64(1_000)), 1_000);
        assert_eq!(of(bson::Bson::Double(1_000.0)), 1_000);
        assert_eq!(of(bson::Bson::Double(1_000.5)), 0);
        assert_eq!(of(bson::Bson::Int32(-5)), 0);
        assert_eq!(of(bson::Bson::Int64(i64::MAX)), super::MAX_LEASE_MS);
        assert_eq!(super::of_mark(&bson::doc! {}), 0);
    }
}
