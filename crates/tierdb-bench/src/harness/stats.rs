//! The statistics every report takes over repeated runs: the median (the workspace's
//! one), ratios of medians made side by side, and the rate format of the tables.
//!
//! Invariants: a median is one of the values given (never an average of two), so a
//! report's median run can be found among its runs; an empty set has none.

use std::cmp::Ordering;

/// Which of the two middle values an even count of runs reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Middle {
    /// The upper one (`len / 2`): most reports.
    Upper,
    /// The lower one (`(len - 1) / 2`): the spitfire experiments.
    Lower,
}

/// A value with a total order for sorting (floats by [`f64::total_cmp`]).
pub trait Ranked: Copy {
    fn rank(&self, other: &Self) -> Ordering;
}

impl Ranked for f64 {
    fn rank(&self, other: &Self) -> Ordering {
        self.total_cmp(other)
    }
}

impl Ranked for u64 {
    fn rank(&self, other: &Self) -> Ordering {
        self.cmp(other)
    }
}

/// The median of `values`, taking `middle` of an even count; `None` if empty.
pub fn median<T: Ranked>(values: impl IntoIterator<Item = T>, middle: Middle) -> Option<T> {
    let mut v: Vec<T> = values.into_iter().collect();
    v.sort_by(T::rank);
    let i = match middle {
        Middle::Upper => v.len() / 2,
        Middle::Lower => v.len().saturating_sub(1) / 2,
    };
    let m = v.get(i).copied();
    debug_assert_eq!(m.is_none(), v.is_empty(), "a median exists exactly when there are values");
    m
}

/// The median a table shows for a point of `wanted` runs: `None` unless every run
/// produced a value. A point where a run failed (its data did not fit) is never shown as
/// the median of the runs that came before the failure; its reports keep them.
pub fn median_of_all<T: Ranked>(values: &[T], wanted: usize, middle: Middle) -> Option<T> {
    if values.len() < wanted {
        return None;
    }
    debug_assert_eq!(values.len(), wanted, "{} values for a point of {wanted} runs", values.len());
    median(values.iter().copied(), middle)
}

/// `a / b` when both exist and `b` is positive.
pub fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// A rate as the tables print it: `1.23M`, `45.6k`, `789`.
pub fn fmt_rate(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_with_a_failed_run_has_no_median() {
        assert_eq!(median_of_all(&[3.0, 1.0, 2.0], 3, Middle::Upper), Some(2.0));
        // The second of three runs did not fit: the first is not the point's median.
        assert_eq!(median_of_all(&[3.0], 3, Middle::Upper), None);
        assert_eq!(median_of_all::<f64>(&[], 3, Middle::Upper), None);
    }

    #[test]
    fn medians_take_the_asked_middle() {
        assert_eq!(median([3.0, 1.0, 2.0], Middle::Upper), Some(2.0));
        assert_eq!(median([4.0, 1.0], Middle::Upper), Some(4.0));
        assert_eq!(median([3.0, 1.0, 2.0, 4.0], Middle::Upper), Some(3.0));
        assert_eq!(median([3.0, 1.0, 2.0, 4.0], Middle::Lower), Some(2.0));
        assert_eq!(median([5u64, 1, 3], Middle::Upper), Some(3));
        assert_eq!(median([5u64, 1, 3], Middle::Lower), Some(3));
        assert_eq!(median(Vec::<f64>::new(), Middle::Upper), None);
        assert_eq!(median(Vec::<u64>::new(), Middle::Lower), None);
    }

    #[test]
    fn ratios_need_a_positive_divisor() {
        assert_eq!(ratio(Some(6.0), Some(3.0)), Some(2.0));
        assert_eq!(ratio(Some(6.0), Some(0.0)), None);
        assert_eq!(ratio(None, Some(1.0)), None);
    }

    #[test]
    fn rates_are_short() {
        assert_eq!(fmt_rate(1_234_567.0), "1.23M");
        assert_eq!(fmt_rate(45_600.0), "45.6k");
        assert_eq!(fmt_rate(789.0), "789");
    }
}
