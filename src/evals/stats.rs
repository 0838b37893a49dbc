//! The statistics of an eval: means with 95% intervals (Wilson for rates,
//! a seeded percentile bootstrap for numbers), paired differences with a
//! baseline, and latency percentiles. Pure functions over plain numbers.

/// The normal quantile of a two-sided 95% interval.
const Z95: f64 = 1.959_963_984_540_054;

/// Bootstrap resamples: enough for stable 2.5% and 97.5% percentiles.
const RESAMPLES: usize = 2_000;

/// The seed of every bootstrap: the same values give the same interval.
pub(crate) const SEED: u64 = 0x1917_e7a1;

/// A mean and its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Estimate {
    /// The mean (a rate for booleans).
    pub mean: f64,
    /// The interval's lower end.
    pub low: f64,
    /// The interval's upper end.
    pub high: f64,
}

/// The Wilson score interval of `successes` out of `n` (n > 0).
#[must_use]
pub(crate) fn wilson(successes: usize, n: usize) -> Estimate {
    if n == 0 {
        return Estimate { mean: 0.0, low: 0.0, high: 0.0 };
    }
    let (k, n) = (successes as f64, n as f64);
    let p = k / n;
    let z2 = Z95 * Z95;
    let denominator = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denominator;
    let margin = Z95 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denominator;
    Estimate { mean: p, low: (center - margin).max(0.0), high: (center + margin).min(1.0) }
}

/// The mean of `values` with a percentile-bootstrap 95% interval
/// ([`RESAMPLES`] resamples drawn with a generator seeded by `seed`).
#[must_use]
pub(crate) fn bootstrap(values: &[f64], seed: u64) -> Estimate {
    let mean = mean(values);
    if values.len() < 2 {
        return Estimate { mean, low: mean, high: mean };
    }
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut means: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            let sum: f64 = (0..values.len()).map(|_| values[rng.usize(..values.len())]).sum();
            let n = values.len() as f64;
            sum / n
        })
        .collect();
    means.sort_by(f64::total_cmp);
    Estimate { mean, low: percentile(&means, 2.5), high: percentile(&means, 97.5) }
}

/// The mean (0 for no values).
#[must_use]
pub(crate) fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let n = values.len() as f64;
    values.iter().sum::<f64>() / n
}

/// The `p`-th percentile (0 to 100) of `sorted`, interpolated linearly
/// between the closest ranks (0 for no values).
#[must_use]
pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    match sorted {
        [] => 0.0,
        [only] => *only,
        _ => {
            let rank = p / 100.0 * (sorted.len() - 1) as f64;
            // `rank` is in [0, len - 1].
            let below = rank.floor() as usize;
            let above = (below + 1).min(sorted.len() - 1);
            let fraction = rank - below as f64;
            sorted[below] + (sorted[above] - sorted[below]) * fraction
        }
    }
}

/// The estimate of a score's values: Wilson when every value is 0 or 1
/// and `rate` says they are booleans, the bootstrap otherwise.
#[must_use]
pub(crate) fn estimate(values: &[f64], rate: bool) -> Estimate {
    if rate {
        let successes = values.iter().sum::<f64>().round() as usize;
        return wilson(successes, values.len());
    }
    bootstrap(values, SEED)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 5e-4
    }

    #[test]
    fn wilson_matches_published_intervals() {
        // Wilson (1927); values as in Newcombe (1998), table I.
        let e = wilson(8, 10);
        assert!(close(e.low, 0.4902) && close(e.high, 0.9433), "{e:?}");
        let e = wilson(0, 10);
        assert!(close(e.low, 0.0) && close(e.high, 0.2775), "{e:?}");
        let e = wilson(10, 10);
        assert!(close(e.low, 0.7225) && close(e.high, 1.0), "{e:?}");
        let e = wilson(15, 148);
        assert!(close(e.low, 0.0624) && close(e.high, 0.1605), "{e:?}");
        assert_eq!(wilson(0, 0), Estimate { mean: 0.0, low: 0.0, high: 0.0 });
    }

    #[test]
    fn percentiles_interpolate_between_ranks() {
        let sorted = [1.0, 2.0, 3.0, 4.0];
        assert!(close(percentile(&sorted, 50.0), 2.5));
        assert!(close(percentile(&sorted, 95.0), 3.85));
        assert!(close(percentile(&sorted, 0.0), 1.0));
        assert!(close(percentile(&sorted, 100.0), 4.0));
        assert!(close(percentile(&[7.0], 95.0), 7.0));
        assert!(close(percentile(&[], 50.0), 0.0));
    }

    #[test]
    fn the_bootstrap_is_reproducible_and_near_the_normal_interval() {
        // 200 values with a known mean (0.5) and standard deviation.
        let values: Vec<f64> = (0..200).map(|i| f64::from(i % 11) / 10.0).collect();
        let a = bootstrap(&values, SEED);
        assert_eq!(a, bootstrap(&values, SEED), "same seed, same interval");
        assert!(close(a.mean, mean(&values)));
        let m = mean(&values);
        let var = values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / 199.0;
        let half = Z95 * (var / 200.0).sqrt();
        assert!(((a.high - a.low) / 2.0 - half).abs() < 0.15 * half, "{a:?} vs ±{half}");
        assert!(a.low < m && m < a.high);
        let constant = bootstrap(&[0.7; 30], SEED);
        assert!(close(constant.low, 0.7) && close(constant.high, 0.7));
        assert_eq!(bootstrap(&[0.3], SEED), Estimate { mean: 0.3, low: 0.3, high: 0.3 });
    }
}
