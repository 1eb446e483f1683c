//! The slotted layout of a decision point's SELECT group: weight changes that move only the
//! flows they must.
//!
//! A switch maps a flow to a SELECT bucket by a hash, through a table it rebuilds from the
//! weights on every MODIFY. Open vSwitch's table (`dp_hash`, 256 slots apportioned by the
//! Webster method in bucket order) moves slots all along it for a small change: measured on
//! OVS 3.1 (`scripts/select-churn.sh`), the writes 250/5/0/1 → 245/7/3/1 → 240/10/5/1 move 13
//! and 24 slots of 256 where 5 would do, each slot a live TCP flow sent to a path of another
//! length. Equal weights make that table a function of the bucket count alone, so this layout
//! keeps the weights fixed and changes actions instead:
//!
//! - a **catalog**: one bucket per choice (bucket 0 the minimal port, then the candidates, the
//!   logical layout of [`crate::select_weights`] without its padding bucket), weight 0, never
//!   selected;
//! - **[`SLOTS`] slot buckets** of weight 1, each a copy of one catalog bucket.
//!
//! The logical weights (255 quanta + the padding's 1, summing to 256) map one quantum to one
//! slot, so a write reassigns exactly the slots whose share changed and every other flow keeps
//! its path, on any switch whose selection is a deterministic function of equal weights (OVS's
//! `dp_hash` table and its default hash alike). The price is size: 256 buckets, about 8 KB per
//! GROUP_MOD and group-description entry.

use crate::openflow::action::Action;
use crate::openflow::group::Bucket;
use crate::select_weights::{PADDING_WEIGHT, WEIGHT_QUANTA};

/// Slot buckets of a slotted group: one per weight quantum, padding included.
pub const SLOTS: usize = WEIGHT_QUANTA as usize + PADDING_WEIGHT as usize;

/// Why buckets or weights do not make a slotted group.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SlotError {
    /// A logical group needs its minimal bucket and its padding bucket.
    #[error("{0} logical buckets: at least the minimal and the padding bucket are needed")]
    TooFewBuckets(usize),
    /// The padding bucket must be a copy of bucket 0 (it only carries the padding weight).
    #[error("the padding bucket is not a copy of bucket 0")]
    PaddingMismatch,
    /// Two catalog buckets are the same, so a slot could not tell which it copies.
    #[error("catalog buckets {0} and {1} are the same")]
    DuplicateCatalog(usize, usize),
    /// A slot bucket is a copy of no catalog bucket.
    #[error("slot {0} copies no catalog bucket")]
    UnknownSlot(usize),
    /// Weights given for a different number of logical buckets.
    #[error("{got} weights for {expected} logical buckets")]
    WeightCount {
        /// Logical buckets (catalog + padding).
        expected: usize,
        /// Weights given.
        got: usize,
    },
    /// Weights that do not sum to one per slot.
    #[error("weights sum to {0}, not {SLOTS}")]
    WeightSum(u32),
}

/// What a bucket is apart from its weight.
fn structure(b: &Bucket) -> (u32, u32, &[Action]) {
    (b.watch_port, b.watch_group, &b.actions)
}

/// A decision point's group in the slotted layout: its catalog and, per slot, the catalog bucket
/// the slot copies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotGroup {
    catalog: Vec<Bucket>,
    slots: Vec<usize>,
    /// Per slot, the number of the write that last moved it (0: none since it was read or laid
    /// out); `writes` counts this group's writes.
    moved: Vec<u64>,
    writes: u64,
}

impl SlotGroup {
    /// The slotted form of logical buckets (minimal, candidates, padding, weights summing to
    /// [`SLOTS`]): slots given out in bucket order, the padding's to bucket 0.
    pub fn from_logical(logical: &[Bucket]) -> Result<Self, SlotError> {
        let (pad, body) = logical
            .split_last()
            .filter(|(_, body)| !body.is_empty())
            .ok_or(SlotError::TooFewBuckets(logical.len()))?;
        if body.first().map(structure) != Some(structure(pad)) {
            return Err(SlotError::PaddingMismatch);
        }
        let catalog: Vec<Bucket> = body.iter().map(|b| b.clone().with_weight(0)).collect();
        check_distinct(&catalog)?;
        let mut g = SlotGroup {
            catalog,
            slots: Vec::new(),
            moved: vec![0; SLOTS],
            writes: 0,
        };
        let weights: Vec<u16> = logical.iter().map(|b| b.weight).collect();
        let counts = g.counts_for(&weights)?;
        g.slots = counts
            .iter()
            .enumerate()
            .flat_map(|(i, &n)| std::iter::repeat_n(i, n))
            .collect();
        Ok(g)
    }

    /// Recognises a group as installed: `Ok(None)` when it is not in the slotted layout (not
    /// exactly [`SLOTS`] trailing weight-1 buckets after at least one weight-0 bucket), an
    /// error when it has that shape but a slot copies no catalog bucket or the catalog repeats.
    pub fn parse(buckets: &[Bucket]) -> Result<Option<Self>, SlotError> {
        let Some(n_catalog) = buckets.len().checked_sub(SLOTS).filter(|&n| n > 0) else {
            return Ok(None);
        };
        let (catalog, slots) = buckets.split_at(n_catalog);
        if catalog.iter().any(|b| b.weight != 0) || slots.iter().any(|b| b.weight != 1) {
            return Ok(None);
        }
        check_distinct(catalog)?;
        let slots = slots
            .iter()
            .enumerate()
            .map(|(i, s)| {
                catalog
                    .iter()
                    .position(|c| structure(c) == structure(s))
                    .ok_or(SlotError::UnknownSlot(i))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(SlotGroup {
            catalog: catalog.to_vec(),
            slots,
            moved: vec![0; SLOTS],
            writes: 0,
        }))
    }

    /// The buckets to install: the catalog, then the slots.
    pub fn buckets(&self) -> Vec<Bucket> {
        let slot = |&i: &usize| self.catalog.get(i).map(|b| b.clone().with_weight(1));
        self.catalog
            .iter()
            .cloned()
            .chain(self.slots.iter().filter_map(slot))
            .collect()
    }

    /// The logical buckets this group stands for: the catalog with its slot counts as weights,
    /// bucket 0 giving one to the padding bucket that follows (so a group written from
    /// [`crate::select_weights`] weights reads back as those weights).
    pub fn logical(&self) -> Vec<Bucket> {
        let weights = self.logical_weights();
        self.catalog
            .iter()
            .chain(self.catalog.first())
            .zip(weights)
            .map(|(b, w)| b.clone().with_weight(w))
            .collect()
    }

    /// The logical weights (catalog order, then the padding's).
    pub fn logical_weights(&self) -> Vec<u16> {
        let mut w: Vec<u16> = (0..self.catalog.len())
            .map(|i| {
                let n = self.slots.iter().filter(|&&s| s == i).count();
                u16::try_from(n).unwrap_or(u16::MAX)
            })
            .collect();
        let pad = match w.first_mut() {
            Some(w0) if *w0 >= PADDING_WEIGHT => {
                *w0 -= PADDING_WEIGHT;
                PADDING_WEIGHT
            }
            _ => 0,
        };
        w.push(pad);
        w
    }

    /// The catalog (weight 0 each).
    pub fn catalog(&self) -> &[Bucket] {
        &self.catalog
    }

    /// Per slot, the index of the catalog bucket it copies.
    pub fn slot_choices(&self) -> &[usize] {
        &self.slots
    }

    /// Whether two groups offer the same choices (which slot copies which is the agent's).
    pub fn same_catalog(&self, other: &SlotGroup) -> bool {
        self.catalog.len() == other.catalog.len()
            && self
                .catalog
                .iter()
                .zip(&other.catalog)
                .all(|(a, b)| structure(a) == structure(b))
    }

    /// Moves the fewest slots that give each catalog bucket its share of `logical` weights
    /// (catalog order, then the padding's, summing to [`SLOTS`]); returns how many moved.
    ///
    /// Which of an over-served bucket's slots move: those it has held longest (ties: the last
    /// slot first), filled in slot order. A cut and the restore that follows therefore send
    /// other flows on the detour the next time, as a rebuilt hash table would, instead of the
    /// same few flows every time; still only as many as the change needs. Deterministic.
    pub fn set_weights(&mut self, logical: &[u16]) -> Result<usize, SlotError> {
        let target = self.counts_for(logical)?;
        let mut have = vec![0usize; self.catalog.len()];
        for &s in &self.slots {
            if let Some(h) = have.get_mut(s) {
                *h += 1;
            }
        }
        let mut excess: Vec<usize> = have
            .iter()
            .zip(&target)
            .map(|(h, t)| h.saturating_sub(*t))
            .collect();
        let moved_at = |k: usize| self.moved.get(k).copied().unwrap_or(0);
        let mut order: Vec<usize> = (0..self.slots.len()).collect();
        order.sort_by(|&a, &b| moved_at(a).cmp(&moved_at(b)).then(b.cmp(&a)));
        let mut surplus: Vec<usize> = Vec::new();
        for k in order {
            let bucket = self.slots.get(k).copied().unwrap_or(usize::MAX);
            if let Some(e) = excess.get_mut(bucket).filter(|e| **e > 0) {
                *e -= 1;
                surplus.push(k);
            }
        }
        surplus.sort_unstable();
        let mut needy = have
            .iter()
            .zip(&target)
            .enumerate()
            .flat_map(|(i, (h, t))| std::iter::repeat_n(i, t.saturating_sub(*h)));
        self.writes += 1;
        let mut moved = 0;
        for k in surplus {
            let (Some(to), Some(slot)) = (needy.next(), self.slots.get_mut(k)) else {
                break;
            };
            *slot = to;
            if let Some(m) = self.moved.get_mut(k) {
                *m = self.writes;
            }
            moved += 1;
        }
        Ok(moved)
    }

    /// Slot counts per catalog bucket for logical weights: bucket 0 takes the padding's.
    fn counts_for(&self, logical: &[u16]) -> Result<Vec<usize>, SlotError> {
        let expected = self.catalog.len() + 1;
        if logical.len() != expected {
            return Err(SlotError::WeightCount {
                expected,
                got: logical.len(),
            });
        }
        let sum: u32 = logical.iter().map(|&w| u32::from(w)).sum();
        if usize::try_from(sum).ok() != Some(SLOTS) {
            return Err(SlotError::WeightSum(sum));
        }
        let (pad, body) = logical.split_last().ok_or(SlotError::TooFewBuckets(0))?;
        Ok(body
            .iter()
            .enumerate()
            .map(|(i, &w)| usize::from(w) + if i == 0 { usize::from(*pad) } else { 0 })
            .collect())
    }
}

fn check_distinct(catalog: &[Bucket]) -> Result<(), SlotError> {
    for (i, a) in catalog.iter().enumerate() {
        if let Some(j) = catalog
            .iter()
            .skip(i + 1)
            .position(|b| structure(a) == structure(b))
        {
            return Err(SlotError::DuplicateCatalog(i, i + 1 + j));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::select_weights::{equal_cost_weights, weights};
    use proptest::prelude::*;

    fn bucket(port: u32, weight: u16) -> Bucket {
        Bucket {
            weight,
            watch_port: port,
            ..Bucket::new(weight, vec![Action::output(port)])
        }
    }

    fn logical(ports: &[u32], w: &[u16]) -> Vec<Bucket> {
        ports
            .iter()
            .chain(ports.first())
            .zip(w)
            .map(|(&p, &w)| bucket(p, w))
            .collect()
    }

    #[test]
    fn initial_layout_is_catalog_then_slots_in_bucket_order() {
        let g = SlotGroup::from_logical(&logical(&[3, 4, 5], &[250, 5, 0, 1])).unwrap();
        let b = g.buckets();
        assert_eq!(b.len(), 3 + SLOTS);
        assert!(b.iter().take(3).all(|b| b.weight == 0));
        assert!(b.iter().skip(3).all(|b| b.weight == 1));
        let ports: Vec<u32> = b.iter().skip(3).filter_map(Bucket::output_port).collect();
        assert_eq!(ports.iter().filter(|&&p| p == 3).count(), 251);
        assert_eq!(ports.iter().filter(|&&p| p == 4).count(), 5);
        assert_eq!(ports.get(250..), Some(&[3, 4, 4, 4, 4, 4][..]));
        assert_eq!(g.logical_weights(), vec![250, 5, 0, 1]);
        assert_eq!(SlotGroup::parse(&b).unwrap(), Some(g.clone()));
        assert_eq!(g.logical(), logical(&[3, 4, 5], &[250, 5, 0, 1]));
    }

    #[test]
    fn a_write_moves_only_the_changed_share() {
        let mut g = SlotGroup::from_logical(&logical(&[3, 4, 5], &[250, 5, 0, 1])).unwrap();
        for (w, need) in [
            ([245, 7, 3, 1], 5),
            ([240, 10, 5, 1], 5),
            ([255, 0, 0, 1], 15),
            ([0, 128, 127, 1], 255),
        ] {
            let before = g.slot_choices().to_vec();
            assert_eq!(g.set_weights(&w).unwrap(), need);
            let changed = before
                .iter()
                .zip(g.slot_choices())
                .filter(|(a, b)| a != b)
                .count();
            assert_eq!(changed, need);
            assert_eq!(g.logical_weights(), w.to_vec());
        }
    }

    #[test]
    fn weighted_groups_are_not_slotted() {
        assert_eq!(
            SlotGroup::parse(&logical(&[3, 4], &[200, 55, 1])).unwrap(),
            None
        );
        assert_eq!(SlotGroup::parse(&[]).unwrap(), None);
        // 256 weight-1 buckets without a catalog: not slotted either.
        let ones: Vec<Bucket> = (0..SLOTS).map(|_| bucket(3, 1)).collect();
        assert_eq!(SlotGroup::parse(&ones).unwrap(), None);
    }

    #[test]
    fn malformed_slotted_groups_are_errors() {
        let g = SlotGroup::from_logical(&logical(&[3, 4], &[200, 55, 1])).unwrap();
        let mut b = g.buckets();
        if let Some(s) = b.last_mut() {
            *s = bucket(9, 1);
        }
        assert_eq!(SlotGroup::parse(&b), Err(SlotError::UnknownSlot(SLOTS - 1)));
        let mut b = g.buckets();
        if let Some(c) = b.get_mut(1) {
            *c = bucket(3, 0);
        }
        assert_eq!(SlotGroup::parse(&b), Err(SlotError::DuplicateCatalog(0, 1)));
        assert_eq!(
            SlotGroup::from_logical(&logical(&[3, 4], &[200, 55, 1]).split_off(2)),
            Err(SlotError::TooFewBuckets(1))
        );
        let mut bad_pad = logical(&[3, 4], &[200, 55, 1]);
        if let Some(p) = bad_pad.last_mut() {
            *p = bucket(4, 1);
        }
        assert_eq!(
            SlotGroup::from_logical(&bad_pad),
            Err(SlotError::PaddingMismatch)
        );
        let mut g = g;
        assert_eq!(
            g.set_weights(&[200, 55]),
            Err(SlotError::WeightCount {
                expected: 3,
                got: 2
            })
        );
        assert_eq!(g.set_weights(&[200, 50, 1]), Err(SlotError::WeightSum(251)));
        assert_eq!(g.logical_weights(), vec![200, 55, 1]);
    }

    /// A cut, its restore and the same cut again: the second cut detours other slots than the
    /// first (those longest on the minimal port), moving no more than it must.
    #[test]
    fn repeated_cuts_rotate_the_detoured_slots() {
        let mut g = SlotGroup::from_logical(&logical(&[3, 4], &[255, 0, 1])).unwrap();
        let detoured = |g: &SlotGroup| -> Vec<usize> {
            (0..SLOTS).filter(|&k| g.slot_choices()[k] == 1).collect()
        };
        assert_eq!(g.set_weights(&[250, 5, 1]).unwrap(), 5);
        let first = detoured(&g);
        assert_eq!(first, (251..256).collect::<Vec<_>>());
        assert_eq!(g.set_weights(&[255, 0, 1]).unwrap(), 5);
        assert_eq!(g.set_weights(&[250, 5, 1]).unwrap(), 5);
        let second = detoured(&g);
        assert_eq!(second, (246..251).collect::<Vec<_>>());
        // Every slot takes its turn: 52 cuts of 5 cover the 256.
        let mut seen: std::collections::BTreeSet<usize> = first.into_iter().collect();
        seen.extend(second);
        for _ in 0..50 {
            g.set_weights(&[255, 0, 1]).unwrap();
            g.set_weights(&[250, 5, 1]).unwrap();
            seen.extend(detoured(&g));
        }
        assert_eq!(seen.len(), SLOTS);
    }

    #[test]
    fn catalog_comparison_ignores_slots() {
        let a = SlotGroup::from_logical(&logical(&[3, 4, 5], &[255, 0, 0, 1])).unwrap();
        let mut b = a.clone();
        b.set_weights(&[100, 100, 55, 1]).unwrap();
        assert!(a.same_catalog(&b));
        let c = SlotGroup::from_logical(&logical(&[3, 5, 4], &[255, 0, 0, 1])).unwrap();
        assert!(!a.same_catalog(&c));
    }

    proptest! {
        /// Any sequence of the agent's writes: each moves exactly the slots whose share changed
        /// (half the L1 distance of the counts), reads back as written and parses as written.
        #[test]
        fn writes_move_the_fewest_slots(
            n in 0usize..6,
            ps in proptest::collection::vec(0.0f64..=100.0, 1..12),
            equal in any::<bool>(),
        ) {
            let ports: Vec<u32> = (1..=u32::try_from(n).unwrap() + 1).collect();
            let first = weights(100.0, n);
            let mut g = SlotGroup::from_logical(&logical(&ports, &first)).unwrap();
            let mut installed = first;
            for p in ps {
                let w = if equal {
                    let mut all = vec![100.0; n + 1];
                    all[0] = p;
                    equal_cost_weights(&all)
                } else {
                    weights(p, n)
                };
                let count = |w: &[u16]| {
                    let mut c: Vec<i64> = w.iter().map(|&x| i64::from(x)).collect();
                    let pad = c.pop().unwrap();
                    c[0] += pad;
                    c
                };
                let need: i64 = count(&installed)
                    .iter()
                    .zip(count(&w))
                    .map(|(a, b)| (a - b).abs())
                    .sum::<i64>() / 2;
                prop_assert_eq!(i64::try_from(g.set_weights(&w).unwrap()).unwrap(), need);
                prop_assert_eq!(g.logical_weights(), w.clone());
                let read = SlotGroup::parse(&g.buckets()).unwrap().unwrap();
                prop_assert_eq!(read.slot_choices(), g.slot_choices());
                installed = w;
            }
        }
    }
}
