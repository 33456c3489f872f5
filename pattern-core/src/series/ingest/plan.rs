//! The writes a batch plans for one key's items: a fill of the open document, then inserts
//! of new ones (for a series cut by span, per window).

use bson::Bson;

use super::{Group, Open, Planned, State};
use crate::series::push::seconds;
use crate::series::TimeId;
use crate::spec::SeriesSpec;
use crate::store::query::{Filter, Path};
use crate::store::shape::bucket_id;
use crate::store::WriteOp;
use crate::Result;

/// The writes of one key's items in a batch, added to the batch's.
pub(super) struct Plan<'p, 'a> {
    pub(super) spec: &'p SeriesSpec<'p>,
    pub(super) g: usize,
    pub(super) group: &'p Group<'a>,
    pub(super) ops: &'p mut Vec<WriteOp>,
    pub(super) planned: &'p mut Vec<Planned>,
}

impl Plan<'_, '_> {
    /// Fill the newest document, then insert whole new ones. Always planned.
    pub(super) fn by_size(&mut self, st: &mut State) -> Result<bool> {
        let (size, n) = (self.spec.size as usize, self.group.entries.len());
        let mut done = 0;
        if let Some((id, count)) = st.newest.filter(|(_, c)| (*c as usize) < size) {
            let take = (size - count as usize).min(n);
            self.fill(0..take, id, count, st.next - 1)?;
            st.newest = Some((id, count + take as u32));
            done = take;
        }
        while done < n {
            let take = size.min(n - done);
            self.insert(done..done + take, st)?;
            done += take;
        }
        Ok(true)
    }

    /// Cut by span: per window, fill its open document, then insert new ones. Planned only
    /// when the items' windows never go back (their runs are then in input order, as the
    /// batch's writes are); otherwise `false`, and the key's items take the ordinary push.
    pub(super) fn spanned(&mut self, st: &mut State) -> Result<bool> {
        let (size, n) = (self.spec.size as usize, self.group.entries.len());
        let window = |i: usize| (self.spec.keeps).window_of(self.group.entries[i].millis);
        if (1..n).any(|i| window(i) < window(i - 1)) {
            return Ok(false);
        }
        let mut done = 0;
        while done < n {
            let w = window(done);
            let run = (done..n).find(|&i| window(i) != w).unwrap_or(n);
            let open =
                (st.open.iter_mut()).find(|o| Some(o.window) == w && (o.count as usize) < size);
            if let Some(o) = open {
                let take = (size - o.count as usize).min(run - done);
                let (id, count, number) = (o.id, o.count, o.number);
                o.count += take as u32;
                self.fill(done..done + take, id, count, number)?;
                done += take;
                continue;
            }
            let take = size.min(run - done);
            let id = self.insert(done..done + take, st)?;
            st.open.push(Open {
                window: w.unwrap_or(0),
                id,
                count: take as u32,
                number: st.next - 1,
            });
            done += take;
        }
        Ok(true)
    }

    fn values(&self, r: std::ops::Range<usize>) -> (Vec<Bson>, Vec<i64>) {
        let entries = &self.group.entries[r];
        (
            entries.iter().map(|e| e.item.clone()).collect(),
            entries.iter().map(|e| e.millis).collect(),
        )
    }

    /// Items `r` pushed into document `number` (`_id` parts `id`), which holds `count`.
    fn fill(
        &mut self,
        r: std::ops::Range<usize>,
        id: TimeId,
        count: u32,
        number: i64,
    ) -> Result<()> {
        let spec = self.spec;
        let (values, millis) = self.values(r.clone());
        let kept = spec.kept(&values, &millis)?;
        let mut update = spec.push_update(values, &kept);
        update.set_on_insert = spec.on_insert(self.group.key, number);
        let bson_id = Bson::String(bucket_id(self.group.prefix, id.seconds, id.suffix));
        // The count as a range, not an equality: should the document be gone, the upsert
        // inserts it with the count the `$inc` gives; should its count differ (another
        // writer pushed), the upsert is refused on the `_id` and the batch stops here.
        let c = Bson::Int64(i64::from(count));
        // The key too: an upsert on a cluster sharded by it must name it.
        let filter = Filter::and([
            spec.by_key(self.group.key),
            Filter::Eq("_id".into(), bson_id.clone()),
            Filter::Gte(Path::from(spec.count_field), c.clone()),
            Filter::Lte(Path::from(spec.count_field), c),
        ]);
        self.ops.push(WriteOp::Update {
            filter,
            update: Box::new(update),
            upsert: true,
        });
        self.planned.push(Planned {
            group: self.g,
            items: r,
            id: bson_id,
            before: count as usize,
        });
        Ok(())
    }

    /// Items `r` as new document `st.next`, after `st.newest`: its `_id` parts.
    fn insert(&mut self, r: std::ops::Range<usize>, st: &mut State) -> Result<TimeId> {
        let spec = self.spec;
        let secs = seconds(self.group.entries[r.start].millis);
        let suffix = match st.newest {
            Some((id, _)) if id.seconds == secs => id.suffix.saturating_add(1),
            _ => 0,
        };
        let id = Bson::String(bucket_id(self.group.prefix, secs, suffix));
        let (values, millis) = self.values(r.clone());
        let kept = spec.kept(&values, &millis)?;
        let doc = spec.new_doc(self.group.key, id.clone(), st.next, &values, &kept);
        self.ops.push(WriteOp::Insert(doc));
        self.planned.push(Planned {
            group: self.g,
            items: r.clone(),
            id,
            before: 0,
        });
        let id = TimeId {
            seconds: secs,
            suffix,
        };
        st.newest = Some((id, r.len() as u32));
        st.next += 1;
        Ok(id)
    }
}
