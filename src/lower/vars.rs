//! The variable of each name of a [`Scope`](super::expr::Scope): a hash
//! table of one `u32` a name.
//!
//! A contract may have a million nodes, and every name an expression
//! reads is looked up here. In a table of that size each lookup is a cache
//! miss, and a general-purpose table (hashbrown) takes two: its control
//! bytes, then the slot. Here a slot holds the variable and, in the bits
//! the variable does not need, a fingerprint of the name's hash, so a
//! lookup reads one slot (linear probing at most half full: the next slot
//! is usually in the same cache line) and compares a name's text only when
//! the fingerprints agree. The names themselves stay with the scope; the
//! table asks for them by variable.
//!
//! Before the table, a lookup tries a small cache of the variables noted
//! lately (see [`Vars::note`]): lowering notes each node as it lowers it,
//! and a name is mostly read near where it is declared (the node before,
//! a few nodes up), so most lookups of a big contract are answered from
//! a few kilobytes that stay cached.

use std::cell::Cell;

/// Slots of the cache of lately noted variables (a power of two): 16 KiB,
/// for tables of at least as many names (a smaller table stays cached
/// itself, and most scopes are a few params).
const RECENT: usize = 4096;

/// How many names ahead [`Vars::of`] fetches a slot: enough misses in
/// flight to cover one's latency with the work of the others.
const AHEAD: usize = 16;

/// Variables by the hash of their names.
pub(super) struct Vars {
    /// 0 for an empty slot, else the fingerprint in the bits above
    /// `var_bits` and the variable plus one below.
    slots: Box<[u32]>,
    /// The low bits of a slot that hold the variable plus one.
    var_mask: u32,
    /// How many bits the fingerprint has (32 minus the variable's bits).
    fingerprint_bits: u32,
    /// The variable plus one last noted for the low bits of its name's
    /// hash (0: none).
    recent: Box<[Cell<u32>]>,
}

impl Vars {
    /// An empty table for up to `names` names (at most `u32::MAX - 1`).
    pub(super) fn with_capacity(names: usize) -> Self {
        let buckets = (names.max(4) * 2).next_power_of_two();
        let largest = u32::try_from(names).unwrap_or(u32::MAX - 1) + 1;
        let var_bits = u32::BITS - largest.leading_zeros();
        let var_mask = if var_bits == u32::BITS { u32::MAX } else { (1 << var_bits) - 1 };
        // Written, not allocated zeroed: a zeroed allocation is the
        // system's shared zero page until written, so a probe's read and
        // then its insert's write took two page faults a page, the second
        // one flushing the page from every core's TLB.
        #[allow(clippy::slow_vector_initialization)]
        let mut slots = Vec::with_capacity(buckets);
        slots.resize(buckets, 0);
        Vars {
            slots: slots.into_boxed_slice(),
            var_mask,
            fingerprint_bits: u32::BITS - var_bits,
            recent: (0..if names >= RECENT { RECENT } else { 0 }).map(|_| Cell::new(0)).collect(),
        }
    }

    /// The table of `count` names, name `i` being variable `i`: `hash`
    /// gives the hash of name `i`, `same(v, i)` whether variable `v`'s name
    /// is name `i`'s. Also the repeated names: `(i, v)` when name `i` is
    /// variable `v`'s, declared first.
    ///
    /// A big table is far larger than the caches, and each insert's slot a
    /// miss; so each name's slot is fetched [`AHEAD`] names before it is
    /// written, and the misses overlap.
    pub(super) fn of(
        count: usize,
        mut hash: impl FnMut(usize) -> u64,
        mut same: impl FnMut(u32, usize) -> bool,
    ) -> (Self, Vec<(usize, u32)>) {
        let mut vars = Vars::with_capacity(count);
        let mut repeated = Vec::new();
        let mut hashes = [0; AHEAD];
        for i in 0..count + AHEAD {
            if i >= AHEAD {
                let at = i - AHEAD;
                let var = u32::try_from(at).unwrap_or(u32::MAX - 1);
                if let Err(first) = vars.insert(hashes[at % AHEAD], var, |v| same(v, at)) {
                    repeated.push((at, first));
                }
            }
            if i < count {
                let h = hash(i);
                vars.prefetch(h);
                hashes[i % AHEAD] = h;
            }
        }
        (vars, repeated)
    }

    /// Asks the processor to fetch the slot where a probe for `hash` starts.
    fn prefetch(&self, hash: u64) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
            // Truncation intended: the low bits of the hash pick the bucket.
            #[allow(clippy::cast_possible_truncation)]
            let at = hash as usize & (self.slots.len() - 1);
            let slot: *const u32 = &raw const self.slots[at];
            // SAFETY: SSE is part of every x86_64 processor, and a prefetch
            // neither reads nor writes memory for the program (it cannot
            // fault); the address is a slot of the table besides.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(slot.cast()) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = hash;
    }

    /// Notes that `var` (whose name has `hash`) was read or declared
    /// lately. It must be the variable [`Vars::find`] gives for its name
    /// (the first, when a name is repeated).
    pub(super) fn note(&self, hash: u64, var: u32) {
        if let Some(slot) = self.recent_slot(hash) {
            slot.set(var + 1);
        }
    }

    /// The cache's slot for `hash`, when the table has a cache.
    #[allow(clippy::cast_possible_truncation)]
    fn recent_slot(&self, hash: u64) -> Option<&Cell<u32>> {
        self.recent.get(hash as usize & (RECENT - 1))
    }

    /// The variable whose name has `hash` and for which `is` holds.
    pub(super) fn find(&self, hash: u64, mut is: impl FnMut(u32) -> bool) -> Option<u32> {
        let recent = self.recent_slot(hash).map_or(0, Cell::get);
        if recent != 0 && is(recent - 1) {
            return Some(recent - 1);
        }
        self.probe(hash, is).ok()
    }

    /// Adds `var` under `hash` unless a variable for which `is` holds is
    /// there already: that variable is returned and nothing is added.
    pub(super) fn insert(
        &mut self,
        hash: u64,
        var: u32,
        is: impl FnMut(u32) -> bool,
    ) -> Result<(), u32> {
        match self.probe(hash, is) {
            Ok(first) => Err(first),
            Err(empty) => {
                self.slots[empty] = self.fingerprint(hash) | (var + 1);
                Ok(())
            }
        }
    }

    /// The variable under `hash` for which `is` holds, or the empty slot
    /// where its probe ends.
    fn probe(&self, hash: u64, mut is: impl FnMut(u32) -> bool) -> Result<u32, usize> {
        let fingerprint = self.fingerprint(hash);
        let mask = self.slots.len() - 1;
        // Truncation intended: the low bits of the hash pick the bucket.
        #[allow(clippy::cast_possible_truncation)]
        let mut at = hash as usize & mask;
        loop {
            let slot = self.slots[at];
            if slot == 0 {
                return Err(at);
            }
            let var = (slot & self.var_mask) - 1;
            if slot & !self.var_mask == fingerprint && is(var) {
                return Ok(var);
            }
            at = (at + 1) & mask;
        }
    }

    /// The top bits of `hash`, in the slot's fingerprint bits.
    fn fingerprint(&self, hash: u64) -> u32 {
        if self.fingerprint_bits == 0 {
            return 0;
        }
        // Truncation intended: the top 32 bits of the hash.
        #[allow(clippy::cast_possible_truncation)]
        let top = (hash >> 32) as u32;
        top & !self.var_mask
    }
}

#[cfg(test)]
mod tests {
    use std::hash::BuildHasher;

    use super::{RECENT, Vars};

    /// A table of `names`, each hashed by `hash`; the repeated names.
    fn table(names: &[&str], hash: impl Fn(&str) -> u64) -> (Vars, Vec<(usize, u32)>) {
        Vars::of(names.len(), |i| hash(names[i]), |v, i| names[v as usize] == names[i])
    }

    fn find(vars: &Vars, names: &[&str], name: &str, hash: impl Fn(&str) -> u64) -> Option<u32> {
        vars.find(hash(name), |v| names[v as usize] == name)
    }

    #[test]
    fn every_name_finds_its_first_variable() {
        let owned: Vec<String> = (0..5000).map(|i| format!("n{i}")).collect();
        let mut names: Vec<&str> = owned.iter().map(String::as_str).collect();
        names.push("n17");
        let hasher = hashbrown::DefaultHashBuilder::default();
        let hash = |s: &str| hasher.hash_one(s);
        let (vars, repeated) = table(&names, hash);
        assert_eq!(repeated, vec![(5000, 17)]);
        for (i, name) in names.iter().enumerate().take(5000) {
            assert_eq!(find(&vars, &names, name, hash), Some(u32::try_from(i).unwrap()));
        }
        assert_eq!(find(&vars, &names, "n5000", hash), None);
        assert_eq!(find(&vars, &names, "", hash), None);
    }

    #[test]
    fn colliding_hashes_are_told_apart_by_the_names() {
        // Every name in one bucket with one fingerprint: the probe walks
        // and compares names.
        let names = ["a", "b", "c", "b", "d"];
        let (vars, repeated) = table(&names, |_| 42);
        assert_eq!(repeated, vec![(3, 1)]);
        assert_eq!(find(&vars, &names, "d", |_| 42), Some(4));
        assert_eq!(find(&vars, &names, "e", |_| 42), None);
        // The same bucket, other fingerprints.
        let (vars, _) = table(&names, |s| 42 | (u64::from(s.as_bytes()[0]) << 56));
        assert_eq!(find(&vars, &names, "c", |s| 42 | (u64::from(s.as_bytes()[0]) << 56)), Some(2));
    }

    #[test]
    fn noted_variables_are_found_first() {
        let owned: Vec<String> = (0..RECENT).map(|i| format!("n{i}")).collect();
        let names: Vec<&str> = owned.iter().map(String::as_str).collect();
        // `n2` and `n5` share the cache's slot 7 (and a bucket).
        let hasher = hashbrown::DefaultHashBuilder::default();
        let hash = |s: &str| match s {
            "n2" => 7 | 1 << 40,
            "n5" => 7,
            _ => match hasher.hash_one(s) {
                h if h & 0xfff == 7 => h ^ 1,
                h => h,
            },
        };
        let (vars, _) = table(&names, hash);
        vars.note(hash("n2"), 2);
        let mut compared = Vec::new();
        let found = vars.find(hash("n2"), |v| {
            compared.push(v);
            names[v as usize] == "n2"
        });
        assert_eq!((found, compared), (Some(2), vec![2]));
        // A noted variable of another name in the same slot is passed over.
        assert_eq!(find(&vars, &names, "n5", hash), Some(5));
        // A small table has no cache: noting is harmless.
        let (small, _) = table(&names[..3], hash);
        small.note(hash("n2"), 2);
        assert_eq!(find(&small, &names[..3], "n1", hash), Some(1));
    }

    #[test]
    fn an_empty_table_finds_nothing() {
        let vars = Vars::with_capacity(0);
        assert_eq!(vars.find(7, |_| true), None);
    }
}
