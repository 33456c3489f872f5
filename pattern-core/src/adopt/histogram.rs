//! A histogram of non-negative integers in memory that does not grow with the number of
//! values: exact below 1,024, then 64 sub-buckets per power of two (percentiles within 1.6%).

use serde::Serialize;

/// Values below this are counted exactly.
const EXACT: u64 = 1024;
/// Sub-buckets per power of two above [`EXACT`].
const SUB: u64 = 64;

/// Counts of values, in fixed memory (at most 1,024 + 54 × 64 counters).
#[derive(Clone, Debug, Default)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    sum: u128,
    min: Option<u64>,
    max: u64,
}

/// The slot of a value: exact below [`EXACT`], else (power of two, sub-bucket).
fn slot(v: u64) -> usize {
    if v < EXACT {
        return v as usize;
    }
    let power = 63 - v.leading_zeros() as u64; // >= 10
    let sub = (v >> (power - 6)) & (SUB - 1);
    (EXACT + (power - 10) * SUB + sub) as usize
}

/// The largest value of a slot.
fn slot_high(s: usize) -> u64 {
    let s = s as u64;
    if s < EXACT {
        return s;
    }
    let power = (s - EXACT) / SUB + 10;
    let sub = (s - EXACT) % SUB;
    let low = (1u64 << power) | (sub << (power - 6));
    low.saturating_add((1u64 << (power - 6)) - 1)
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts one value.
    pub fn record(&mut self, v: u64) {
        let s = slot(v);
        if self.counts.len() <= s {
            self.counts.resize(s + 1, 0);
        }
        self.counts[s] += 1;
        self.total += 1;
        self.sum += u128::from(v);
        self.min = Some(self.min.map_or(v, |m| m.min(v)));
        self.max = self.max.max(v);
    }

    /// How many values were counted.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// The largest value counted (0 when none).
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The sum of the values counted.
    pub fn sum(&self) -> u128 {
        self.sum
    }

    /// The smallest value `v` such that at least `p` percent of the values are `<= v`
    /// (exact below 1,024; above, the top of its sub-bucket, never above the maximum).
    pub fn percentile(&self, p: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let want = ((p / 100.0) * self.total as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (s, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= want {
                return slot_high(s).min(self.max);
            }
        }
        self.max
    }

    /// How many values are greater than `v`.
    pub fn above(&self, v: u64) -> u64 {
        // Exact for v below EXACT; above, a sub-bucket holding v counts as not above.
        let s = slot(v);
        self.counts.iter().skip(s + 1).sum()
    }

    /// The summary a report shows: percentiles and bars by powers of two.
    pub fn distribution(&self) -> Distribution {
        let mut bars: Vec<Bar> = Vec::new();
        for (s, &c) in self.counts.iter().enumerate() {
            if c == 0 {
                continue;
            }
            let v = slot_high(s);
            let (low, high) = if v == 0 {
                (0, 0)
            } else {
                let p = 63 - v.leading_zeros();
                (1u64 << p, (1u64 << p) | ((1u64 << p) - 1))
            };
            match bars.last_mut() {
                Some(b) if b.low == low => b.count += c,
                _ => bars.push(Bar {
                    low,
                    high,
                    count: c,
                }),
            }
        }
        Distribution {
            count: self.total,
            min: self.min.unwrap_or(0),
            p50: self.percentile(50.0),
            p90: self.percentile(90.0),
            p99: self.percentile(99.0),
            max: self.max,
            mean: if self.total == 0 {
                0.0
            } else {
                self.sum as f64 / self.total as f64
            },
            bars,
        }
    }
}

/// Percentiles and a histogram of some quantity (array lengths, items per key, bytes).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Distribution {
    /// Values recorded.
    pub count: u64,
    /// The least value.
    pub min: u64,
    /// The median (the bucket's upper bound that holds it).
    pub p50: u64,
    /// The 90th percentile (likewise).
    pub p90: u64,
    /// The 99th percentile (likewise).
    pub p99: u64,
    /// The greatest value.
    pub max: u64,
    /// The mean.
    pub mean: f64,
    /// Counts by powers of two: `0`, `1`, `2..=3`, `4..=7`...
    pub bars: Vec<Bar>,
}

/// One bar of a [`Distribution`]: how many values lie in `low..=high`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Bar {
    /// The least value the bar counts.
    pub low: u64,
    /// The greatest value the bar counts.
    pub high: u64,
    /// Values in `low..=high`.
    pub count: u64,
}

impl Distribution {
    /// The bars drawn as text, one line each, `#` scaled to `width` for the largest.
    pub fn render(&self, width: usize) -> String {
        let most = self.bars.iter().map(|b| b.count).max().unwrap_or(0).max(1);
        let mut out = String::new();
        for b in &self.bars {
            let label = if b.low == b.high {
                format!("{}", b.low)
            } else {
                format!("{}-{}", b.low, b.high)
            };
            let n = ((b.count as f64 / most as f64) * width as f64).ceil() as usize;
            out.push_str(&format!(
                "  {label:>17} {:>10} {}\n",
                b.count,
                "#".repeat(n)
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_below_1024_and_within_2_percent_above() {
        let mut h = Histogram::new();
        for v in 0..1000u64 {
            h.record(v);
        }
        assert_eq!(h.percentile(50.0), 499);
        assert_eq!(h.percentile(99.0), 989);
        assert_eq!(h.max(), 999);
        assert_eq!(h.above(989), 10);
        let mut h = Histogram::new();
        for v in 1..=1_000_000u64 {
            h.record(v);
        }
        for p in [50.0, 90.0, 99.0] {
            let exact = (p / 100.0 * 1_000_000.0) as u64;
            let got = h.percentile(p);
            assert!(
                got >= exact && (got - exact) as f64 <= exact as f64 * 0.016,
                "{p}: {got} vs {exact}"
            );
        }
        assert_eq!(h.percentile(100.0), 1_000_000);
        let d = h.distribution();
        assert_eq!(d.bars.iter().map(|b| b.count).sum::<u64>(), 1_000_000);
        assert_eq!(
            d.bars[0],
            Bar {
                low: 1,
                high: 1,
                count: 1
            }
        );
        assert_eq!(
            d.bars[1],
            Bar {
                low: 2,
                high: 3,
                count: 2
            }
        );
    }

    #[test]
    fn slots_round_trip() {
        for v in [0u64, 1, 1023, 1024, 1025, 2047, 2048, 1 << 40, u64::MAX] {
            let s = slot(v);
            assert!(slot_high(s) >= v, "{v}");
            if s > 0 {
                assert!(slot_high(s - 1) < v, "{v}");
            }
        }
    }
}
