//! Traffic patterns: the one registry of pattern names, shared by the simulator (per-packet
//! destinations), the Mininet harness (`fabricflow-controller traffic`, one flow per host) and
//! anything that needs the traffic matrix, so that a name means the same everywhere.
//!
//! # Definition
//!
//! A [`Pattern`] on a fabric, with a seed for the patterns that pick hosts, gives every source
//! host a *target set*; the source's destination is uniformly distributed over its target set
//! minus itself, and a source whose set holds nobody else sends nothing. That distribution
//! ([`Destinations::probability`]) is the pattern's only definition. Hosts are indices into
//! [`Fabric::hosts`] (the order of the controller's `topology` export); groups are the hosts'
//! [`Location::group`](crate::addressing::Location) (Dragonfly groups, fat-tree pods).
//!
//! - `uniform`: every host.
//! - `adv+K` (K ≥ 1): the hosts of the group K places after the source's in ascending group
//!   order, cyclically: group (G + K) mod g on a Dragonfly. K must not be a multiple of the
//!   number of groups.
//! - `hotspot` = `hotspot:4`, `hotspot:C` (C ≥ 1): the seed picks one hot host and C
//!   contributors outside its group. A contributor's set is the hot host alone; every other host
//!   except the hot host (which only receives) targets the *rest*: all hosts but the hot one and
//!   the contributors. So C sources converge on one host link while the rest is uniform among
//!   themselves and never adds to the hot spot.
//! - `hotspots:N` = `hotspots:N:5`, `hotspots:N:P` (N ≥ 1, 1 ≤ P ≤ 100): the dFtree seed's
//!   traffic. The hosts, in order, are cut into N blocks of equal size (the last takes the
//!   remainder); the first host of each block is its hot spot. Every host of a block except
//!   the hot spot sends P % of its packets to it and the rest uniformly to any other host;
//!   the hot spots send uniformly. This is the one pattern that is a *mixture*: its
//!   distribution is P % on the hot spot plus (100 − P) % uniform, and
//!   [`Destinations::flows`] samples only its uniform part (one flow per host cannot carry a
//!   share).
//! - `linkhot` = `linkhot:2`, `linkhot:C` (C ≥ 1): a *link* hot spot on a torus or mesh
//!   (k-ary n-cube, n ≥ 2; on any other fabric [`TrafficError::NotACube`]). The seed picks a
//!   switch `a` with coordinates (x, y, …); the C *hot source* switches are (x + i, y, …) and
//!   their *hot destination* switches (x + C + i, y + 1, …), i = 0..C, coordinates mod k on a
//!   torus (on a mesh `a` is picked among the switches where all of them fit). Host j of hot
//!   source switch i sends everything to host j of hot destination switch i. Dimension-order
//!   routes go C hops "+" along dimension 0 in row (y, …), then one hop "+" in dimension 1, so
//!   all C·p hot flows cross the row's dimension-0 "+" link from x + C − 1 to x + C (the *hot
//!   link*; the row's links from x to x + 2C − 1 carry 1..C of them), while their destinations
//!   are distinct hosts; a second minimal route (dimension 1 first) avoids the row. Every other
//!   host sends uniformly to every host but the hot sources (the hot destinations included).
//!   Needs 2C ≤ k ([`TrafficError::HotRowTooShort`]) so that the row holds sources and
//!   destinations apart and "+" is a minimal way round.
//! - `shuffle`: the perfect shuffle: host i (of n) sends to host 2i mod (n − 1), and host n − 1
//!   to itself; for n = 2^b that is the 1-bit left rotation of i's b bits. Hosts that map to
//!   themselves (0 and n − 1) send nothing.
//!
//! # Two realisations of the one definition
//!
//! - [`Destinations::draw`]: an independent destination per packet (the simulator).
//! - [`Destinations::flows`]: one long-lived flow per sending host (the harness: iperf3), a
//!   *balanced* sample: each flow's destination has exactly the distribution above, but the
//!   senders of one target set are spread over it as evenly as possible, so no host receives
//!   more than ⌈senders / set size⌉ flows. When the senders are the set (uniform, hotspot's
//!   rest) the sample is a uniformly random derangement; when they are disjoint from it (adv+K,
//!   hotspot's contributors) it is a random bijection onto the set, cycled if the set is
//!   smaller. Independent draws would instead give some hosts two or three flows and others none,
//!   which with few long flows makes host links, not the fabric, the bottleneck.
//!
//! So the per-packet traffic matrix (rates) is the expectation, over seeds, of the flow sample's
//! matrix. Both are deterministic: the same (fabric, pattern, seed) gives the same
//! [`Destinations`] and the same flows; `draw` consumes only the caller's RNG.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::topology::cube::Cube;
use crate::topology::{Fabric, FabricKind, HostId, PortNo, SwitchId};

/// Contributors of plain `hotspot`.
pub const DEFAULT_HOTSPOT_CONTRIBUTORS: u32 = 4;

/// ChaCha streams of the seed: hosts a pattern picks, and the flow sample. Stream 0 is left to
/// the caller (the simulator's per-packet RNG is `ChaCha8Rng::seed_from_u64(seed)`), so none of
/// the three consumes another's numbers.
const PICK_STREAM: u64 = 1;
const FLOW_STREAM: u64 = 2;

/// A traffic pattern by name (see the module documentation for each definition).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pattern {
    /// `uniform`.
    Uniform,
    /// `adv+K`.
    Adv(u32),
    /// `hotspot[:C]`.
    Hotspot { contributors: u32 },
    /// `hotspots:N[:P]`: N hot spots, P % of every contributor's packets to its hot spot.
    HotSpots { spots: u32, percent: u32 },
    /// `shuffle`.
    Shuffle,
    /// `linkhot[:C]`: C hot source switches in one row whose flows share one link.
    LinkHot { sources: u32 },
}

/// Hot source switches of plain `linkhot`.
pub const DEFAULT_LINKHOT_SOURCES: u32 = 2;

/// Percent of a `hotspots:N` contributor's packets that go to its hot spot (the seed's 5 %).
pub const DEFAULT_HOTSPOTS_PERCENT: u32 = 5;

/// Why a pattern cannot be parsed or laid on a fabric.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrafficError {
    #[error(
        "unknown traffic pattern {0:?}; expected uniform, adv+K (K ≥ 1), hotspot[:C] (C ≥ 1), hotspots:N[:P] (N ≥ 1, 1 ≤ P ≤ 100), linkhot[:C] (C ≥ 1) or shuffle"
    )]
    Parse(String),
    #[error("{pattern}: the fabric has {hosts} host(s); every pattern needs at least 2")]
    TooFewHosts { pattern: Pattern, hosts: usize },
    #[error("{pattern}: K must not be a multiple of the fabric's {groups} host group(s)")]
    AdvOwnGroup { pattern: Pattern, groups: usize },
    #[error(
        "{pattern}: {hosts} host(s) cannot hold that many hot spots (at most one per 2 hosts)"
    )]
    TooManyHotSpots { pattern: Pattern, hosts: usize },
    #[error(
        "{pattern}: a link hot spot needs a torus or mesh of at least 2 dimensions, not {fabric:?}"
    )]
    NotACube {
        pattern: Pattern,
        fabric: FabricKind,
    },
    #[error("{pattern}: a row of {k} switches cannot hold 2 × {sources} hot source and destination switches")]
    HotRowTooShort {
        pattern: Pattern,
        sources: u32,
        k: u32,
    },
    #[error("{pattern}: needs {wanted} contributors outside the hot host's group; {available} hosts are")]
    TooFewContributors {
        pattern: Pattern,
        wanted: u32,
        available: usize,
    },
}

impl FromStr for Pattern {
    type Err = TrafficError;
    fn from_str(s: &str) -> Result<Self, TrafficError> {
        let bad = || TrafficError::Parse(s.to_owned());
        // Digits only: `u32::from_str` would also take "+1".
        let positive = |text: &str| match text.parse::<u32>() {
            Ok(n) if n > 0 && text.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
            _ => Err(bad()),
        };
        match s {
            "uniform" => Ok(Pattern::Uniform),
            "shuffle" => Ok(Pattern::Shuffle),
            "hotspot" => Ok(Pattern::Hotspot {
                contributors: DEFAULT_HOTSPOT_CONTRIBUTORS,
            }),
            "linkhot" => Ok(Pattern::LinkHot {
                sources: DEFAULT_LINKHOT_SOURCES,
            }),
            _ => {
                if let Some(k) = s.strip_prefix("adv+") {
                    Ok(Pattern::Adv(positive(k)?))
                } else if let Some(rest) = s.strip_prefix("hotspots:") {
                    let (n, p) = match rest.split_once(':') {
                        Some((n, p)) => (positive(n)?, positive(p)?),
                        None => (positive(rest)?, DEFAULT_HOTSPOTS_PERCENT),
                    };
                    if p > 100 {
                        return Err(bad());
                    }
                    Ok(Pattern::HotSpots {
                        spots: n,
                        percent: p,
                    })
                } else if let Some(c) = s.strip_prefix("linkhot:") {
                    Ok(Pattern::LinkHot {
                        sources: positive(c)?,
                    })
                } else if let Some(c) = s.strip_prefix("hotspot:") {
                    Ok(Pattern::Hotspot {
                        contributors: positive(c)?,
                    })
                } else {
                    Err(bad())
                }
            }
        }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pattern::Uniform => f.write_str("uniform"),
            Pattern::Shuffle => f.write_str("shuffle"),
            Pattern::Adv(k) => write!(f, "adv+{k}"),
            Pattern::Hotspot {
                contributors: DEFAULT_HOTSPOT_CONTRIBUTORS,
            } => f.write_str("hotspot"),
            Pattern::Hotspot { contributors } => write!(f, "hotspot:{contributors}"),
            Pattern::HotSpots {
                spots,
                percent: DEFAULT_HOTSPOTS_PERCENT,
            } => write!(f, "hotspots:{spots}"),
            Pattern::HotSpots { spots, percent } => write!(f, "hotspots:{spots}:{percent}"),
            Pattern::LinkHot {
                sources: DEFAULT_LINKHOT_SOURCES,
            } => f.write_str("linkhot"),
            Pattern::LinkHot { sources } => write!(f, "linkhot:{sources}"),
        }
    }
}

impl Pattern {
    /// The pattern's destination distributions on `fabric`; `seed` picks the hosts of the
    /// patterns that pick any (hotspot, linkhot).
    pub fn destinations(self, fabric: &Fabric, seed: u64) -> Result<Destinations, TrafficError> {
        Destinations::new(self, fabric, seed)
    }

    /// The balanced one-flow-per-sender sample of the pattern on `fabric` (see
    /// [`Destinations::flows`]).
    pub fn flows(self, fabric: &Fabric, seed: u64) -> Result<Vec<(HostId, HostId)>, TrafficError> {
        Ok(self.destinations(fabric, seed)?.flows(seed))
    }
}

/// A source's target set and, if the source belongs to it, its position there (never drawn).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Target {
    set: usize,
    own: Option<u32>,
}

/// A pattern laid on a fabric: every host's destination distribution.
#[derive(Debug, Clone)]
pub struct Destinations {
    pattern: Pattern,
    /// Target sets, hosts ascending.
    sets: Vec<Vec<HostId>>,
    /// Per source host; `None`: it sends nothing.
    of: Vec<Option<Target>>,
    /// `hotspots`: the share of a contributor's packets to its hot spot, and per source host
    /// its hot spot (`None` for the hot spots themselves). Empty for the other patterns.
    hot_share: f64,
    hot_of: Vec<Option<HostId>>,
}

fn stream(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}

impl Destinations {
    fn new(pattern: Pattern, fabric: &Fabric, seed: u64) -> Result<Self, TrafficError> {
        let n = fabric.hosts().len();
        if n < 2 || u32::try_from(n).is_err() {
            return Err(TrafficError::TooFewHosts { pattern, hosts: n });
        }
        let own = |pos: usize| u32::try_from(pos).ok();
        let mut hot_share = 0.0;
        let mut hot_of = Vec::new();
        let (sets, of) = match pattern {
            Pattern::HotSpots { spots, percent } => {
                let spots = usize::try_from(spots).unwrap_or(usize::MAX);
                if spots > n / 2 {
                    return Err(TrafficError::TooManyHotSpots { pattern, hosts: n });
                }
                hot_share = f64::from(percent) / 100.0;
                let block = n / spots.max(1);
                hot_of = (0..n)
                    .map(|h| {
                        let hot = (h / block).min(spots - 1) * block;
                        (hot != h).then_some(hot)
                    })
                    .collect();
                (
                    vec![(0..n).collect()],
                    (0..n)
                        .map(|h| {
                            Some(Target {
                                set: 0,
                                own: own(h),
                            })
                        })
                        .collect(),
                )
            }
            Pattern::Uniform => (
                vec![(0..n).collect()],
                (0..n)
                    .map(|h| {
                        Some(Target {
                            set: 0,
                            own: own(h),
                        })
                    })
                    .collect(),
            ),
            Pattern::Shuffle => {
                let dst = |i: usize| if i + 1 == n { i } else { (2 * i) % (n - 1) };
                let sets: Vec<Vec<HostId>> = (0..n).map(|i| vec![dst(i)]).collect();
                let of = (0..n)
                    .map(|i| (dst(i) != i).then_some(Target { set: i, own: None }))
                    .collect();
                (sets, of)
            }
            Pattern::Adv(k) => {
                let mut groups: BTreeMap<u16, Vec<HostId>> = BTreeMap::new();
                for (h, host) in fabric.hosts().iter().enumerate() {
                    groups.entry(host.location.group).or_default().push(h);
                }
                let ng = groups.len();
                let shift = usize::try_from(k).unwrap_or(usize::MAX) % ng.max(1);
                if ng < 2 || shift == 0 {
                    return Err(TrafficError::AdvOwnGroup {
                        pattern,
                        groups: ng,
                    });
                }
                let position: BTreeMap<u16, usize> =
                    groups.keys().enumerate().map(|(i, &g)| (g, i)).collect();
                let of = fabric
                    .hosts()
                    .iter()
                    .map(|host| {
                        position.get(&host.location.group).map(|&i| Target {
                            set: (i + shift) % ng,
                            own: None,
                        })
                    })
                    .collect();
                (groups.into_values().collect(), of)
            }
            Pattern::Hotspot { contributors } => {
                let mut rng = stream(seed, PICK_STREAM);
                let hot = rng.gen_range(0..n);
                let group = |h: HostId| fabric.host(h).map(|x| x.location.group);
                let outside: Vec<HostId> = (0..n).filter(|&h| group(h) != group(hot)).collect();
                let wanted = usize::try_from(contributors).unwrap_or(usize::MAX);
                if outside.len() < wanted {
                    return Err(TrafficError::TooFewContributors {
                        pattern,
                        wanted: contributors,
                        available: outside.len(),
                    });
                }
                let mut chosen: Vec<HostId> =
                    outside.choose_multiple(&mut rng, wanted).copied().collect();
                chosen.sort_unstable();
                let rest: Vec<HostId> = (0..n)
                    .filter(|h| *h != hot && chosen.binary_search(h).is_err())
                    .collect();
                let mut of = vec![None; n];
                for &c in &chosen {
                    if let Some(t) = of.get_mut(c) {
                        *t = Some(Target { set: 0, own: None });
                    }
                }
                if rest.len() >= 2 {
                    for (i, &r) in rest.iter().enumerate() {
                        if let Some(t) = of.get_mut(r) {
                            *t = Some(Target {
                                set: 1,
                                own: own(i),
                            });
                        }
                    }
                }
                (vec![vec![hot], rest], of)
            }
            Pattern::LinkHot { sources } => {
                let pairs = link_hot_pairs(pattern, sources, fabric, seed)?;
                let mut hot_src: Vec<HostId> = pairs.iter().map(|&(s, _)| s).collect();
                hot_src.sort_unstable();
                let rest: Vec<HostId> = (0..n)
                    .filter(|h| hot_src.binary_search(h).is_err())
                    .collect();
                let mut of = vec![None; n];
                if rest.len() >= 2 {
                    for (i, &r) in rest.iter().enumerate() {
                        if let Some(t) = of.get_mut(r) {
                            *t = Some(Target {
                                set: 0,
                                own: own(i),
                            });
                        }
                    }
                }
                let mut sets = vec![rest];
                for &(s, d) in &pairs {
                    if let Some(t) = of.get_mut(s) {
                        *t = Some(Target {
                            set: sets.len(),
                            own: None,
                        });
                    }
                    sets.push(vec![d]);
                }
                (sets, of)
            }
        };
        Ok(Destinations {
            pattern,
            sets,
            of,
            hot_share,
            hot_of,
        })
    }

    /// The hot spots of `hotspots:N` in host order (empty for the other patterns).
    pub fn hot_spots(&self) -> Vec<HostId> {
        let mut v: Vec<HostId> = self.hot_of.iter().flatten().copied().collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The hot flows of `linkhot`, (source, destination) sorted by source (empty for the other
    /// patterns): the sources whose one target is a single host.
    pub fn hot_flows(&self) -> Vec<(HostId, HostId)> {
        if !matches!(self.pattern, Pattern::LinkHot { .. }) {
            return Vec::new();
        }
        (0..self.of.len())
            .filter_map(|h| match self.target(h) {
                Some((t, &[d])) if t.own.is_none() => Some((h, d)),
                _ => None,
            })
            .collect()
    }

    /// The hot spot `src` sends its share to (`hotspots:N`), if any.
    pub fn hot_spot_of(&self, src: HostId) -> Option<HostId> {
        self.hot_of.get(src).copied().flatten()
    }

    /// The pattern these distributions define.
    pub fn pattern(&self) -> Pattern {
        self.pattern
    }

    /// Number of hosts (sources and destinations are `0..hosts()`).
    pub fn hosts(&self) -> usize {
        self.of.len()
    }

    /// Probability that a packet (or the flow) of `src` goes to `dst`: the definition.
    pub fn probability(&self, src: HostId, dst: HostId) -> f64 {
        let Some((t, set)) = self.target(src) else {
            return 0.0;
        };
        let others = set.len() - usize::from(t.own.is_some());
        let spread = if dst == src || others == 0 || set.binary_search(&dst).is_err() {
            0.0
        } else {
            1.0 / others as f64
        };
        match self.hot_spot_of(src) {
            Some(hot) => {
                (1.0 - self.hot_share) * spread + if dst == hot { self.hot_share } else { 0.0 }
            }
            None => spread,
        }
    }

    fn target(&self, src: HostId) -> Option<(Target, &[HostId])> {
        let t = self.of.get(src).copied().flatten()?;
        Some((t, self.sets.get(t.set)?))
    }

    /// One destination of `src` drawn from its distribution, `None` if `src` sends nothing.
    ///
    /// The simulator's RNG sequence is part of its results: a source inside its set takes one
    /// `u32` draw over the others (`gen_range(0..len - 1)`, its own position skipped), a source
    /// outside one `usize` draw over the set. Keep these draws as they are.
    ///
    /// A `hotspots` contributor first takes one `f64` draw: below the share, its hot spot.
    pub fn draw<R: Rng + ?Sized>(&self, src: HostId, rng: &mut R) -> Option<HostId> {
        if let Some(hot) = self.hot_spot_of(src) {
            if rng.gen::<f64>() < self.hot_share {
                return Some(hot);
            }
        }
        let (t, set) = self.target(src)?;
        match t.own {
            Some(own) => {
                let n = u32::try_from(set.len()).ok().filter(|&n| n >= 2)?;
                let d = rng.gen_range(0..n - 1);
                let d = if d >= own { d + 1 } else { d };
                set.get(usize::try_from(d).ok()?).copied()
            }
            None if set.is_empty() => None,
            None => set.get(rng.gen_range(0..set.len())).copied(),
        }
    }

    /// One flow per sending host, sorted by source: the balanced sample of the module
    /// documentation, from the seed's own RNG stream.
    pub fn flows(&self, seed: u64) -> Vec<(HostId, HostId)> {
        let mut rng = stream(seed, FLOW_STREAM);
        let mut out = Vec::with_capacity(self.of.len());
        for (i, set) in self.sets.iter().enumerate() {
            let senders: Vec<HostId> = (0..self.of.len())
                .filter(|&h| matches!(self.of.get(h), Some(Some(t)) if t.set == i))
                .collect();
            out.extend(balanced(&senders, set, &mut rng));
        }
        out.sort_unstable();
        out
    }
}

/// `linkhot`'s (hot source, hot destination) host pairs on a k-ary n-cube (module docs).
fn link_hot_pairs(
    pattern: Pattern,
    sources: u32,
    fabric: &Fabric,
    seed: u64,
) -> Result<Vec<(HostId, HostId)>, TrafficError> {
    let kind = fabric.kind();
    let cube = match kind {
        FabricKind::Torus { k, n, p } if n >= 2 => Cube::new(k, n, p, true).ok(),
        FabricKind::Mesh { k, n, p } if n >= 2 => Cube::new(k, n, p, false).ok(),
        _ => None,
    }
    .ok_or(TrafficError::NotACube {
        pattern,
        fabric: kind,
    })?;
    let k = cube.k;
    if sources.checked_mul(2).is_none_or(|w| w > k) {
        return Err(TrafficError::HotRowTooShort {
            pattern,
            sources,
            k,
        });
    }
    // Start switches where every hot switch fits (all of them on a torus).
    let starts: Vec<u32> = (0..cube.switches())
        .filter(|&a| cube.wrap || (cube.coord(a, 0) + 2 * sources <= k && cube.coord(a, 1) + 1 < k))
        .collect();
    let mut rng = stream(seed, PICK_STREAM);
    let a = *starts
        .choose(&mut rng)
        .ok_or(TrafficError::HotRowTooShort {
            pattern,
            sources,
            k,
        })?;
    let (x, y) = (cube.coord(a, 0), cube.coord(a, 1));
    let host_at: BTreeMap<(SwitchId, PortNo), HostId> = fabric
        .hosts()
        .iter()
        .enumerate()
        .map(|(h, host)| ((host.switch, host.port), h))
        .collect();
    let mut pairs = Vec::new();
    for i in 0..sources {
        let src = cube.with_coord(a, 0, (x + i) % k);
        let dst = cube.with_coord(cube.with_coord(a, 0, (x + sources + i) % k), 1, (y + 1) % k);
        for port in 1..=cube.p {
            let at = |sw: u32| host_at.get(&(usize::try_from(sw).unwrap_or(usize::MAX), port));
            if let (Some(&s), Some(&d)) = (at(src), at(dst)) {
                pairs.push((s, d));
            }
        }
    }
    pairs.sort_unstable();
    Ok(pairs)
}

/// Gives each sender one member of `set` other than itself, uniformly, with every member
/// receiving ⌊senders / |set|⌋ or ⌈…⌉: a shuffle of `set` dealt out cyclically, redrawn while a
/// sender got itself. The senders here are either `set` itself (a uniformly random derangement,
/// ~e draws) or disjoint from it (one draw), and a sender alone in its set never sends.
fn balanced(senders: &[HostId], set: &[HostId], rng: &mut ChaCha8Rng) -> Vec<(HostId, HostId)> {
    if senders.is_empty() || set.is_empty() || (set.len() == 1 && set == senders) {
        return Vec::new();
    }
    let mut order = set.to_vec();
    loop {
        order.shuffle(rng);
        let flows: Vec<(HostId, HostId)> = senders
            .iter()
            .copied()
            .zip(order.iter().copied().cycle())
            .collect();
        if flows.iter().all(|(s, d)| s != d) {
            return flows;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::TopologySpec;
    use std::collections::BTreeSet;

    fn fabric(spec: &str) -> Fabric {
        spec.parse::<TopologySpec>().unwrap().build().unwrap()
    }

    fn group(f: &Fabric, h: HostId) -> u16 {
        f.hosts()[h].location.group
    }

    fn receivers(flows: &[(HostId, HostId)]) -> BTreeMap<HostId, usize> {
        let mut m = BTreeMap::new();
        for &(_, d) in flows {
            *m.entry(d).or_default() += 1;
        }
        m
    }

    #[test]
    fn names_parse_and_print_back() {
        for (text, p) in [
            ("uniform", Pattern::Uniform),
            ("adv+1", Pattern::Adv(1)),
            ("adv+12", Pattern::Adv(12)),
            ("hotspot", Pattern::Hotspot { contributors: 4 }),
            ("hotspot:7", Pattern::Hotspot { contributors: 7 }),
            (
                "hotspots:3",
                Pattern::HotSpots {
                    spots: 3,
                    percent: 5,
                },
            ),
            (
                "hotspots:9:20",
                Pattern::HotSpots {
                    spots: 9,
                    percent: 20,
                },
            ),
            ("shuffle", Pattern::Shuffle),
            ("linkhot", Pattern::LinkHot { sources: 2 }),
            ("linkhot:3", Pattern::LinkHot { sources: 3 }),
        ] {
            assert_eq!(text.parse::<Pattern>(), Ok(p));
            assert_eq!(p.to_string(), text);
        }
        assert_eq!(
            "hotspot:4".parse::<Pattern>().unwrap().to_string(),
            "hotspot"
        );
    }

    #[test]
    fn malformed_names_are_a_parse_error_naming_the_input() {
        for bad in [
            "",
            "un",
            "Uniform",
            "adv",
            "adv+",
            "adv+0",
            "adv+x",
            "adv+-1",
            "adv++1",
            "adv+1 ",
            "adv-1",
            "hotspot:",
            "hotspot:0",
            "hotspot:+2",
            "linkhot:",
            "linkhot:0",
            "linkhot2",
            "hot",
            "uniform->adv+1@5",
        ] {
            let e = bad.parse::<Pattern>().unwrap_err();
            assert_eq!(e, TrafficError::Parse(bad.to_owned()));
            assert!(e.to_string().contains("expected uniform"), "{e}");
        }
    }

    #[test]
    fn shuffle_is_the_one_bit_left_rotation() {
        let f = fabric("torus:k=8,n=2,p=1");
        let d = Pattern::Shuffle.destinations(&f, 1).unwrap();
        let mut rng = stream(7, 0);
        for i in 0..64usize {
            let rot = ((i << 1) | (i >> 5)) & 63;
            if rot == i {
                assert_eq!(d.draw(i, &mut rng), None, "{i}");
            } else {
                assert_eq!(d.draw(i, &mut rng), Some(rot), "{i}");
                assert_eq!(d.probability(i, rot), 1.0);
            }
        }
        let flows = Pattern::Shuffle.flows(&f, 3).unwrap();
        assert_eq!(flows.len(), 62);
        assert!(flows.iter().all(|&(s, t)| t == ((s << 1) | (s >> 5)) & 63));
    }

    #[test]
    fn uniform_flows_are_a_derangement_of_every_host() {
        let f = fabric("dragonfly:p=2,a=4,h=2");
        for seed in 1..20 {
            let fl = Pattern::Uniform.flows(&f, seed).unwrap();
            assert_eq!(fl.len(), 72);
            assert!(fl.iter().enumerate().all(|(i, &(s, d))| s == i && d != s));
            assert!(receivers(&fl).values().all(|&n| n == 1));
            assert_eq!(receivers(&fl).len(), 72);
        }
    }

    #[test]
    fn adv_flows_are_a_bijection_onto_group_plus_k() {
        let f = fabric("dragonfly:p=2,a=4,h=2"); // 9 groups of 8 hosts
        for k in [1, 2, 4, 8, 10] {
            let fl = Pattern::Adv(k).flows(&f, 3).unwrap();
            assert_eq!(fl.len(), 72);
            for &(s, d) in &fl {
                assert_eq!(u32::from(group(&f, d)), (u32::from(group(&f, s)) + k) % 9);
            }
            assert!(receivers(&fl).values().all(|&n| n == 1), "adv+{k}");
        }
    }

    #[test]
    fn adv_on_a_fat_tree_targets_pod_plus_k() {
        let f = fabric("fattree:k=4,n=2");
        let pods = f
            .hosts()
            .iter()
            .map(|h| h.location.group)
            .collect::<std::collections::BTreeSet<_>>();
        let fl = Pattern::Adv(1).flows(&f, 1).unwrap();
        assert_eq!(fl.len(), f.hosts().len());
        let np = u16::try_from(pods.len()).unwrap();
        for &(s, d) in &fl {
            assert_eq!(group(&f, d), (group(&f, s) + 1) % np);
        }
        assert!(receivers(&fl).values().all(|&n| n == 1));
    }

    #[test]
    fn adv_k_multiple_of_the_groups_is_refused() {
        let f = fabric("dragonfly:p=1,a=2,h=1"); // 3 groups
        for k in [3, 6] {
            let e = Pattern::Adv(k).destinations(&f, 1).unwrap_err();
            assert_eq!(
                e,
                TrafficError::AdvOwnGroup {
                    pattern: Pattern::Adv(k),
                    groups: 3
                }
            );
        }
        assert!(Pattern::Adv(4).destinations(&f, 1).is_ok());
    }

    #[test]
    fn hotspot_flows_converge_contributors_and_permute_the_rest() {
        let f = fabric("dragonfly:p=2,a=4,h=2");
        for seed in 1..10 {
            let fl = Pattern::Hotspot { contributors: 4 }
                .flows(&f, seed)
                .unwrap();
            let rx = receivers(&fl);
            let (&hot, &n) = rx.iter().max_by_key(|(_, &n)| n).unwrap();
            assert_eq!(n, 4);
            // The hot host only receives; everyone else sends once and receives at most once.
            assert_eq!(fl.len(), 71);
            assert!(fl.iter().all(|&(s, d)| s != hot && s != d));
            assert!(rx.iter().all(|(&h, &n)| h == hot || n == 1));
            let contributors: Vec<HostId> = fl.iter().filter(|f| f.1 == hot).map(|f| f.0).collect();
            assert!(contributors.iter().all(|&c| group(&f, c) != group(&f, hot)));
            // The rest is a derangement among itself: no contributor receives.
            let rest: Vec<&(HostId, HostId)> = fl.iter().filter(|f| f.1 != hot).collect();
            assert_eq!(rest.len(), 67);
            assert!(rest.iter().all(|f| !contributors.contains(&f.1)));
        }
    }

    #[test]
    fn hotspot_needs_enough_hosts_outside_the_hot_group() {
        let f = fabric("dragonfly:p=1,a=2,h=1"); // 3 groups of 2 hosts: 4 outside any group
        assert!(Pattern::Hotspot { contributors: 4 }.flows(&f, 1).is_ok());
        let e = Pattern::Hotspot { contributors: 5 }
            .destinations(&f, 1)
            .unwrap_err();
        assert!(matches!(
            e,
            TrafficError::TooFewContributors {
                wanted: 5,
                available: 4,
                ..
            }
        ));
    }

    #[test]
    fn same_fabric_pattern_and_seed_give_the_same_flows() {
        let f = fabric("dragonfly:p=2,a=4,h=2");
        for p in ["uniform", "adv+1", "hotspot", "hotspot:2"] {
            let p: Pattern = p.parse().unwrap();
            let a = p.flows(&f, 5).unwrap();
            assert_eq!(a, p.flows(&f, 5).unwrap(), "{p}");
            assert_ne!(a, p.flows(&f, 6).unwrap(), "{p}");
        }
    }

    #[test]
    fn flows_follow_the_definition_on_average_over_seeds() {
        let f = fabric("dragonfly:p=1,a=2,h=1"); // 6 hosts, 3 groups
        for p in [
            Pattern::Uniform,
            Pattern::Adv(1),
            Pattern::Hotspot { contributors: 2 },
        ] {
            let d = p.destinations(&f, 9).unwrap();
            let seeds = 6000;
            let mut count = vec![vec![0u32; 6]; 6];
            for seed in 0..seeds {
                // The same hot host for every seed: only the flow sample varies here.
                for (s, t) in d.flows(seed) {
                    count[s][t] += 1;
                }
            }
            for (s, row) in count.iter().enumerate() {
                for (t, &c) in row.iter().enumerate() {
                    let want = d.probability(s, t);
                    let got = f64::from(c) / seeds as f64;
                    assert!((got - want).abs() < 0.03, "{p} {s}->{t}: {got} vs {want}");
                }
            }
        }
    }

    #[test]
    fn draws_stay_in_the_support_and_follow_the_definition() {
        let f = fabric("dragonfly:p=2,a=2,h=1"); // 3 groups of 4 hosts
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for p in [
            Pattern::Uniform,
            Pattern::Adv(2),
            Pattern::Hotspot { contributors: 3 },
            Pattern::HotSpots {
                spots: 2,
                percent: 30,
            },
        ] {
            let d = p.destinations(&f, 4).unwrap();
            for s in 0..d.hosts() {
                let total: f64 = (0..d.hosts()).map(|t| d.probability(s, t)).sum();
                let draws = 3000;
                let mut count = vec![0u32; d.hosts()];
                for _ in 0..draws {
                    match d.draw(s, &mut rng) {
                        Some(t) => {
                            assert!(d.probability(s, t) > 0.0, "{p}: {s}->{t} outside");
                            count[t] += 1;
                        }
                        None => assert_eq!(total, 0.0, "{p}: {s} silent"),
                    }
                }
                if total > 0.0 {
                    assert!((total - 1.0).abs() < 1e-9);
                    for (t, &c) in count.iter().enumerate() {
                        let got = f64::from(c) / f64::from(draws);
                        assert!((got - d.probability(s, t)).abs() < 0.04, "{p} {s}->{t}");
                    }
                }
            }
        }
    }

    /// `hotspots:N:P`: N blocks of consecutive hosts, the first of each its hot spot, which
    /// gets P % of its block's other hosts' packets on top of the uniform rest.
    #[test]
    fn hotspots_cut_the_hosts_into_blocks_with_a_hot_first_host() {
        let f = fabric("fattree:k=4,n=2"); // 16 hosts
        let d = "hotspots:3:10".parse::<Pattern>().unwrap();
        let d = d.destinations(&f, 1).unwrap();
        // Blocks of 5: 0..5, 5..10, 10..16 (the last takes the remainder).
        assert_eq!(d.hot_spots(), vec![0, 5, 10]);
        assert_eq!(d.hot_spot_of(0), None);
        assert_eq!(d.hot_spot_of(4), Some(0));
        assert_eq!(d.hot_spot_of(15), Some(10));
        assert!((d.probability(4, 0) - (0.1 + 0.9 / 15.0)).abs() < 1e-12);
        assert!((d.probability(4, 5) - 0.9 / 15.0).abs() < 1e-12);
        assert!((d.probability(0, 4) - 1.0 / 15.0).abs() < 1e-12);
        for bad in ["hotspots:0", "hotspots:2:0", "hotspots:2:101", "hotspots:x"] {
            assert!(bad.parse::<Pattern>().is_err(), "{bad}");
        }
        let too_many = Pattern::HotSpots {
            spots: 9,
            percent: 5,
        };
        assert!(too_many.destinations(&f, 1).is_err());
    }

    /// The directed links (switch, output port) of the minimal route from `s` to `t`.
    fn route_links(
        f: &Fabric,
        routes: &crate::routes::Routes,
        s: SwitchId,
        t: SwitchId,
    ) -> Vec<(SwitchId, PortNo)> {
        use crate::topology::Peer;
        let mut out = Vec::new();
        let mut at = s;
        while at != t {
            let port = routes.minimal(at, t)[0];
            out.push((at, port));
            match f.peer(at, port) {
                Some(Peer::Switch { switch, .. }) => at = switch,
                other => panic!("{at}:{port} leads to {other:?}"),
            }
            assert!(out.len() <= f.switches().len());
        }
        out
    }

    /// `linkhot:C`: the hot flows' minimal routes all cross one dimension-0 link, their
    /// destinations are distinct, and everyone else sends uniformly to the non-hot-sources.
    #[test]
    fn linkhot_flows_share_one_link_with_distinct_destinations() {
        for (spec, cube, counts) in [
            (
                "torus:k=8,n=2,p=1",
                Cube::new(8, 2, 1, true).unwrap(),
                vec![1, 2, 3, 4],
            ),
            (
                "mesh:k=4,n=2,p=2",
                Cube::new(4, 2, 2, false).unwrap(),
                vec![1, 2],
            ),
            (
                "torus:k=4,n=3,p=1",
                Cube::new(4, 3, 1, true).unwrap(),
                vec![1, 2],
            ),
        ] {
            let f = fabric(spec);
            let routes = crate::routes::Routes::compute(&f, &BTreeSet::new());
            for c in counts {
                let p = Pattern::LinkHot { sources: c };
                for seed in 1..20 {
                    let d = p.destinations(&f, seed).unwrap();
                    let hot = d.hot_flows();
                    let want = (c * cube.p) as usize;
                    assert_eq!(hot.len(), want, "{spec} {p}");
                    let dsts: BTreeSet<HostId> = hot.iter().map(|h| h.1).collect();
                    let srcs: BTreeSet<HostId> = hot.iter().map(|h| h.0).collect();
                    assert_eq!(dsts.len(), want, "{spec} {p}: destinations distinct");
                    assert!(dsts.is_disjoint(&srcs));
                    let mut shared: Option<BTreeSet<(SwitchId, PortNo)>> = None;
                    for &(s, t) in &hot {
                        assert_eq!(d.probability(s, t), 1.0);
                        let mut rng = stream(seed, 0);
                        assert_eq!(d.draw(s, &mut rng), Some(t));
                        let (ss, ts) = (f.hosts()[s].switch, f.hosts()[t].switch);
                        let links = route_links(&f, &routes, ss, ts);
                        assert_eq!(links.len(), c as usize + 1, "{spec} {p}: C + 1 hops");
                        let links: BTreeSet<_> = links.into_iter().collect();
                        shared = Some(match shared {
                            None => links,
                            Some(x) => x.intersection(&links).copied().collect(),
                        });
                    }
                    let shared = shared.unwrap();
                    assert!(!shared.is_empty(), "{spec} {p} seed {seed}: no shared link");
                    if c >= 2 {
                        assert_eq!(shared.len(), 1, "{spec} {p}");
                    }
                    // The hot link: the dimension-0 "+" link into the first destination column.
                    let row: Vec<_> = shared
                        .iter()
                        .filter(|&&(_, port)| cube.port_dim(port) == Some((0, true)))
                        .collect();
                    assert_eq!(row.len(), 1, "{spec} {p}: {shared:?}");
                    // Background: every other host sends uniformly to every non-hot-source.
                    let others = f.hosts().len() - want - 1;
                    for s in (0..f.hosts().len()).filter(|s| !srcs.contains(s)) {
                        for t in 0..f.hosts().len() {
                            let want_p = if t == s || srcs.contains(&t) {
                                0.0
                            } else {
                                1.0 / others as f64
                            };
                            assert!((d.probability(s, t) - want_p).abs() < 1e-12);
                        }
                    }
                    // One flow per host: a hot destination gets its hot flow and at most one more.
                    let fl = d.flows(seed);
                    assert_eq!(fl.len(), f.hosts().len());
                    assert!(hot.iter().all(|h| fl.contains(h)));
                    assert!(receivers(&fl).values().all(|&n| n <= 2));
                }
            }
        }
    }

    #[test]
    fn linkhot_is_seeded_and_refused_off_cubes_or_on_short_rows() {
        let f = fabric("torus:k=8,n=2,p=1");
        let p = Pattern::LinkHot { sources: 2 };
        let a = p.flows(&f, 5).unwrap();
        assert_eq!(a, p.flows(&f, 5).unwrap());
        assert_ne!(a, p.flows(&f, 6).unwrap());
        let starts: BTreeSet<Vec<(HostId, HostId)>> = (0..40)
            .map(|seed| p.destinations(&f, seed).unwrap().hot_flows())
            .collect();
        assert!(
            starts.len() > 10,
            "the seed picks the row: {}",
            starts.len()
        );
        assert!(Pattern::Uniform
            .destinations(&f, 1)
            .unwrap()
            .hot_flows()
            .is_empty());
        for (spec, c) in [("torus:k=8,n=2,p=1", 5), ("mesh:k=4,n=2,p=2", 3)] {
            let e = Pattern::LinkHot { sources: c }
                .destinations(&fabric(spec), 1)
                .unwrap_err();
            assert!(
                matches!(e, TrafficError::HotRowTooShort { sources, .. } if sources == c),
                "{e}"
            );
        }
        for spec in [
            "dragonfly:p=2,a=4,h=2",
            "fattree:k=4,n=2",
            "torus:k=8,n=1,p=1",
        ] {
            let e = p.destinations(&fabric(spec), 1).unwrap_err();
            assert!(matches!(e, TrafficError::NotACube { .. }), "{spec}: {e}");
            assert!(e.to_string().contains("torus or mesh"));
        }
    }

    #[test]
    fn uniform_draw_is_the_simulators_historic_draw() {
        // One u32 draw over the n - 1 others, skipping the source: the simulator's sequence.
        let f = fabric("dragonfly:p=2,a=4,h=2");
        let d = Pattern::Uniform.destinations(&f, 1).unwrap();
        let (mut a, mut b) = (ChaCha8Rng::seed_from_u64(7), ChaCha8Rng::seed_from_u64(7));
        for src in (0..72).cycle().take(1000) {
            let x: u32 = b.gen_range(0..71);
            let want = if x >= src as u32 { x + 1 } else { x };
            assert_eq!(d.draw(src, &mut a), Some(want as usize));
        }
    }

    #[test]
    fn a_one_host_fabric_is_refused() {
        use crate::topology::{FabricBuilder, FabricKind, SwitchSpec};
        let mut b = FabricBuilder::new(FabricKind::File);
        let sw = b
            .add_switch(SwitchSpec {
                dpid: 1,
                name: "s".into(),
                group: Some(0),
                index: 0,
                level: 0,
                max_port: None,
            })
            .unwrap();
        b.add_host("h".into(), sw, 1).unwrap();
        let f = b.finish().unwrap();
        for p in [
            Pattern::Uniform,
            Pattern::Adv(1),
            Pattern::Hotspot { contributors: 1 },
        ] {
            let e = p.destinations(&f, 1).unwrap_err();
            assert_eq!(
                e,
                TrafficError::TooFewHosts {
                    pattern: p,
                    hosts: 1
                }
            );
        }
    }

    #[test]
    fn two_hosts_in_two_groups_exchange() {
        let f = fabric("dragonfly:p=1,a=1,h=1"); // 2 groups of 1 host
        for p in [Pattern::Uniform, Pattern::Adv(1)] {
            assert_eq!(p.flows(&f, 1).unwrap(), vec![(0, 1), (1, 0)]);
        }
        // One contributor to the hot host; the rest is nobody.
        let fl = Pattern::Hotspot { contributors: 1 }.flows(&f, 1).unwrap();
        assert_eq!(fl.len(), 1);
    }
}
