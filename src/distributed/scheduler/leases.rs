//! The worker's book of its leases. A pop's entries are leased as one field of the
//! worker's lease hash (`<token>` → their lease values, `scripts.rs` says how), so an
//! acknowledgement is a mark: the places of a pop this worker finished are written to
//! `<token>:a` (`1` per finished place), and once every place is finished both fields
//! are deleted. One `HSET` per pop per flush at most, one `HDEL` for the pops finished:
//! a pop's leases cost the server one field, not one per entry.
//!
//! [`LeaseBook`] keeps, per pop still held, the marks as last sent; what has not been
//! sent yet (acknowledgements waiting for their outputs' enqueues, for a cluster's
//! barrier, or withheld) is not in the marks, so a reconnection's `RECONCILE` can
//! write them again as they were sent, never ahead.

use crate::util::FxHashMap;

/// A popped entry: its shard, its pop's token and its place in the pop (from 1).
pub(super) type Lease = (usize, u64, u32);

/// One pop's marks as sent (`b'1'` finished, `b'0'` not) and its open places.
#[derive(Debug)]
struct Pop {
    marks: Vec<u8>,
    open: usize,
    /// Whether `<token>:a` was written (to delete with the pop).
    marked: bool,
}

/// What one flush sends a shard for its acknowledgements.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct ShardAcks {
    /// The lease hash's fields to delete: finished pops and their marks.
    pub(super) hdel: Vec<String>,
    /// `<token>:a` and its marks, for pops partly finished.
    pub(super) hset: Vec<(String, Vec<u8>)>,
}

/// The pops this worker holds leases from, by shard and token.
#[derive(Debug, Default)]
pub(super) struct LeaseBook {
    pops: FxHashMap<(usize, u64), Pop>,
}

impl LeaseBook {
    /// Records a pop's reply: `places` entries, of which those in `empty` (nils, no
    /// lease to finish) are finished already.
    pub(super) fn popped(&mut self, shard: usize, token: u64, places: usize, empty: &[usize]) {
        if places == 0 {
            return;
        }
        let mut marks = vec![b'0'; places];
        for &p in empty {
            if let Some(m) = p.checked_sub(1).and_then(|i| marks.get_mut(i)) {
                *m = b'1';
            }
        }
        let open = marks.iter().filter(|&&m| m == b'0').count();
        self.pops.insert(
            (shard, token),
            Pop {
                marks,
                open,
                marked: false,
            },
        );
    }

    /// Marks `done` finished and says what to send each of `shards` shards: a pop
    /// whose places are all finished is deleted (and forgotten here), one partly
    /// finished gets its marks written. An acknowledgement of a pop not held (sent
    /// twice, or from before a reconnection) is ignored.
    pub(super) fn acked(&mut self, done: &[Lease], shards: usize) -> Vec<ShardAcks> {
        let mut touched: Vec<(usize, u64)> = Vec::new();
        for &(shard, token, place) in done {
            let Some(pop) = self.pops.get_mut(&(shard, token)) else {
                continue;
            };
            let Some(m) = (place as usize)
                .checked_sub(1)
                .and_then(|i| pop.marks.get_mut(i))
            else {
                continue;
            };
            if *m == b'0' {
                *m = b'1';
                pop.open -= 1;
                touched.push((shard, token));
            }
        }
        touched.sort_unstable();
        touched.dedup();
        let mut out: Vec<ShardAcks> = (0..shards).map(|_| ShardAcks::default()).collect();
        for key in touched {
            let (shard, token) = key;
            let Some(acks) = out.get_mut(shard) else {
                continue;
            };
            let finished = self.pops.get(&key).is_some_and(|p| p.open == 0);
            if finished {
                if let Some(pop) = self.pops.remove(&key) {
                    acks.hdel.push(token.to_string());
                    if pop.marked {
                        acks.hdel.push(format!("{token}:a"));
                    }
                }
            } else if let Some(pop) = self.pops.get_mut(&key) {
                pop.marked = true;
                acks.hset.push((format!("{token}:a"), pop.marks.clone()));
            }
        }
        out
    }

    /// `RECONCILE`'s arguments for each of `shards` shards: every pop held, with its
    /// marks as sent (empty when none was), and the pops `unknown` (in flight, or
    /// whose reply never came: their leases, if they ran, must stay).
    pub(super) fn held<'a>(
        &self,
        shards: usize,
        unknown: impl IntoIterator<Item = &'a (usize, u64)>,
    ) -> Vec<Vec<Vec<u8>>> {
        let mut out: Vec<Vec<Vec<u8>>> = vec![Vec::new(); shards];
        let mut keys: Vec<&(usize, u64)> = self.pops.keys().collect();
        keys.sort_unstable();
        for key @ &(shard, token) in keys {
            if let (Some(args), Some(pop)) = (out.get_mut(shard), self.pops.get(key)) {
                args.push(token.to_string().into_bytes());
                args.push(if pop.marked {
                    pop.marks.clone()
                } else {
                    Vec::new()
                });
            }
        }
        for &(shard, token) in unknown {
            if !self.pops.contains_key(&(shard, token))
                && let Some(args) = out.get_mut(shard)
            {
                args.push(token.to_string().into_bytes());
                args.push(Vec::new());
            }
        }
        out
    }

    /// How many pops are held.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.pops.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pop_is_marked_as_its_places_finish_and_deleted_with_its_marks_at_the_last() {
        let mut b = LeaseBook::default();
        b.popped(0, 7, 3, &[]);
        b.popped(1, 8, 2, &[]);
        let first = b.acked(&[(0, 7, 2), (1, 8, 1), (1, 8, 2)], 2);
        assert_eq!(first[0].hset, vec![("7:a".to_owned(), b"010".to_vec())]);
        assert!(first[0].hdel.is_empty());
        assert_eq!(first[1].hdel, ["8"], "never marked: only the pop's field");
        assert!(first[1].hset.is_empty());
        // Sent twice, or a place that is not there: nothing to send.
        assert_eq!(
            b.acked(&[(0, 7, 2), (0, 7, 9), (1, 8, 1)], 2)[0],
            ShardAcks::default()
        );
        let last = b.acked(&[(0, 7, 1), (0, 7, 3)], 2);
        assert_eq!(last[0].hdel, ["7", "7:a"]);
        assert_eq!(b.len(), 0);
    }

    #[test]
    fn reconciling_names_every_pop_held_with_its_marks_as_sent_and_the_pops_unanswered() {
        let mut b = LeaseBook::default();
        b.popped(0, 3, 2, &[]);
        b.popped(0, 4, 3, &[2]);
        b.popped(0, 5, 0, &[]);
        let _ = b.acked(&[(0, 3, 1)], 1);
        let held = b.held(1, &[(0, 6), (0, 3)]);
        let want: Vec<Vec<u8>> = vec![
            b"3".to_vec(),
            b"10".to_vec(),
            b"4".to_vec(),
            Vec::new(),
            b"6".to_vec(),
            Vec::new(),
        ];
        assert_eq!(held, vec![want]);
        // A nil's place needs no acknowledgement: the others finish the pop.
        assert_eq!(b.acked(&[(0, 4, 1), (0, 4, 3)], 1)[0].hdel, ["4"]);
    }
}
