//! The memory hierarchy read from a measured curve: bandwidth against working-set size falls in
//! steps, one per level (a plateau while the working set fits, a fall where it stops fitting). The
//! levels are found where the curve falls, not taken from what the OS reports: a virtual machine
//! reports its host's shared cache, of which the guest may get a fraction.
//!
//! Pure functions over measured points; `cpu::stream` measures a CPU's curves.

/// One measured size of one curve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// Bytes one call touches, counted as STREAM counts them (a copy of n bytes: 2n).
    pub bytes: usize,
    /// From the median call's time.
    pub bytes_per_sec: f64,
    /// From the fastest call's time.
    pub best_bytes_per_sec: f64,
    /// Third quartile over first quartile of the calls' times: 1 when every call took as long.
    pub spread: f64,
}

/// A level found on a curve: the sizes of its plateau and its bandwidth there.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Found {
    /// The first size of the plateau.
    pub from_bytes: usize,
    /// Its last size before the curve falls; `None` for the last plateau (memory).
    pub up_to_bytes: Option<usize>,
    /// The median of the plateau's bandwidths.
    pub bytes_per_sec: f64,
}

/// A level ends where the bandwidth stays below this share of its plateau for two sizes running
/// (one slow size is noise, two are a step).
pub const FALL: f64 = 0.7;
/// The next plateau starts where one size to the next (a factor of two) loses less than this.
pub const FLAT_LOSS: f64 = 0.15;

/// The levels of a curve, fastest first. Sizes below the fastest point still pay a per-call cost,
/// so the first plateau starts there. Points must be in increasing size.
pub fn find_levels(points: &[Point]) -> Vec<Found> {
    let b: Vec<f64> = points.iter().map(|p| p.bytes_per_sec).collect();
    let Some(start) = (0..b.len()).max_by(|&i, &j| b[i].total_cmp(&b[j])) else {
        return Vec::new();
    };
    let mut levels = Vec::new();
    let mut i = start;
    loop {
        let reference = b[i];
        let fallen = |k: usize| b[k] < FALL * reference && b.get(k + 1).is_none_or(|&next| next < FALL * reference);
        let mut j = i;
        while j + 1 < b.len() && !fallen(j + 1) {
            j += 1;
        }
        let mut plateau = b[i..=j].to_vec();
        plateau.sort_by(f64::total_cmp);
        let last = j + 1 == b.len();
        levels.push(Found {
            from_bytes: points[i].bytes,
            up_to_bytes: (!last).then_some(points[j].bytes),
            bytes_per_sec: plateau[plateau.len() / 2],
        });
        if last {
            return levels;
        }
        // Down the fall to where it flattens.
        let mut k = j + 1;
        while k + 1 < b.len() && b[k + 1] < (1.0 - FLAT_LOSS) * b[k] {
            k += 1;
        }
        i = k;
    }
}

/// A cache as the OS reports it, and the working set it holds for the threads measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Reported {
    /// "L1d", "L2", "L3".
    pub name: String,
    /// Bytes of one cache (one core's, for a private one).
    pub bytes: u64,
    /// Bytes all the measured threads' caches of this level hold: one per thread for a cache
    /// private to a core, one in all for a shared one.
    pub holds_bytes: u64,
}

/// The reported cache a found level matches: the one whose capacity its last size lies within a
/// factor of two below to twice above (a plateau ends a step or two before the working set fills
/// the cache, since the cache also holds everything else). The nearest on a log scale wins.
pub fn matching<'a>(found: &Found, reported: &'a [Reported]) -> Option<&'a Reported> {
    let up_to = found.up_to_bytes? as f64;
    reported
        .iter()
        .map(|r| (r, (up_to / r.holds_bytes as f64).log2()))
        .filter(|(_, octaves)| (-2.0..=1.0).contains(octaves))
        .min_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
        .map(|(r, _)| r)
}

/// The bandwidth of a curve at `bytes`, between its two nearest sizes on a log–log scale (at an
/// end, the end's): `value` picks which of a point's bandwidths.
pub fn at(points: &[Point], bytes: usize, value: impl Fn(&Point) -> f64) -> Option<f64> {
    let first = points.first()?;
    let last = points.last()?;
    if bytes <= first.bytes {
        return Some(value(first));
    }
    if bytes >= last.bytes {
        return Some(value(last));
    }
    let k = points.windows(2).position(|w| w[1].bytes >= bytes)?;
    let (a, b) = (&points[k], &points[k + 1]);
    let t = ((bytes as f64).ln() - (a.bytes as f64).ln()) / ((b.bytes as f64).ln() - (a.bytes as f64).ln());
    Some((value(a).ln() * (1.0 - t) + value(b).ln() * t).exp())
}

/// The spread of the curve's nearest measured size to `bytes`.
pub fn spread_at(points: &[Point], bytes: usize) -> Option<f64> {
    let near = |p: &&Point| ((p.bytes as f64).ln() - (bytes as f64).ln()).abs();
    points
        .iter()
        .min_by(|a, b| near(a).total_cmp(&near(b)))
        .map(|p| p.spread)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(bandwidths: &[f64]) -> Vec<Point> {
        (bandwidths.iter().enumerate())
            .map(|(i, &b)| Point {
                bytes: 4096 << i,
                bytes_per_sec: b,
                best_bytes_per_sec: b * 1.1,
                spread: 1.0,
            })
            .collect()
    }

    #[test]
    fn steps_are_found_where_the_curve_falls_and_flattens() {
        // A ramp (per-call cost), a plateau of 4 sizes, a fall over two sizes, a second plateau,
        // one noisy dip that is not a step, and memory.
        let points = curve(&[
            50., 90., 101., 98., 100., 99., 60., 40., 41., 39., 25., 40., 38., 10., 9., 9.,
        ]);
        let levels = find_levels(&points);
        assert_eq!(levels.len(), 3, "{levels:?}");
        assert_eq!(
            (levels[0].from_bytes, levels[0].up_to_bytes),
            (4096 << 2, Some(4096 << 5))
        );
        assert_eq!(levels[0].bytes_per_sec, 100.0);
        assert_eq!(
            (levels[1].from_bytes, levels[1].up_to_bytes),
            (4096 << 7, Some(4096 << 12))
        );
        assert_eq!(levels[1].bytes_per_sec, 40.0);
        assert_eq!((levels[2].from_bytes, levels[2].up_to_bytes), (4096 << 13, None));
        assert_eq!(levels[2].bytes_per_sec, 9.0);
        // A flat curve is one level, memory; an empty one has none.
        assert_eq!(find_levels(&curve(&[5., 5., 5.])).len(), 1);
        assert!(find_levels(&[]).is_empty());
    }

    #[test]
    fn a_level_matches_the_reported_cache_it_fills() {
        let reported = [
            Reported {
                name: "L2".into(),
                bytes: 2 << 20,
                holds_bytes: 4 << 20,
            },
            Reported {
                name: "L3".into(),
                bytes: 260 << 20,
                holds_bytes: 260 << 20,
            },
        ];
        let found = |up_to: usize| Found {
            from_bytes: 0,
            up_to_bytes: Some(up_to),
            bytes_per_sec: 1.0,
        };
        assert_eq!(
            matching(&found(2 << 20), &reported).map(|r| r.name.as_str()),
            Some("L2")
        );
        assert_eq!(
            matching(&found(128 << 20), &reported).map(|r| r.name.as_str()),
            Some("L3")
        );
        // 32 MiB is a level no reported cache explains (a VM's share of its host's L3).
        assert_eq!(matching(&found(32 << 20), &reported), None);
        assert_eq!(
            matching(
                &Found {
                    up_to_bytes: None,
                    ..found(1)
                },
                &reported
            ),
            None
        );
    }

    #[test]
    fn the_curve_is_read_between_its_sizes_on_a_log_scale() {
        let points = curve(&[100., 25.]);
        let mid = at(&points, 4096 * 3 / 2, |p| p.bytes_per_sec).unwrap();
        assert!((mid - 100.0 * 0.25f64.powf((1.5f64).log2())).abs() < 1e-9, "{mid}");
        assert_eq!(at(&points, 1, |p| p.bytes_per_sec), Some(100.0));
        assert_eq!(at(&points, 1 << 30, |p| p.best_bytes_per_sec), Some(25.0 * 1.1));
        assert_eq!(at(&[], 1, |p| p.bytes_per_sec), None);
    }
}
