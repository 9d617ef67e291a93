//! Whether the statements that write a tensor write every element of it.
//!
//! A statement writes a box of its left-hand tensor: per dimension, the
//! whole range `0..extent` of the axis indexing it, or the one element an
//! integer constant names. Deciding whether a union of such boxes covers the
//! tensor is a tautology check (constants over dimensions of two elements
//! are boolean literals), so the search below is bounded by [`WORK_LIMIT`];
//! workloads that reach it (hundreds of partial statements writing one
//! tensor) are accepted unchecked, as before the check existed.

/// Per dimension, the half-open interval of indices a statement writes.
pub(super) type Region = Vec<(i64, i64)>;

/// Region tests the search may make before it gives up (and reports no gap).
const WORK_LIMIT: usize = 1 << 22;

/// The first element in row-major order of a tensor of `shape` that none of
/// `regions` contains, or `None` if they cover it (or the search gave up).
/// Every region has one interval per dimension of `shape`.
pub(super) fn first_unwritten(regions: &[Region], shape: &[i64]) -> Option<Vec<i64>> {
    first_unwritten_within(regions, shape, WORK_LIMIT)
}

/// [`first_unwritten`] with at most `limit` region tests.
fn first_unwritten_within(regions: &[Region], shape: &[i64], limit: usize) -> Option<Vec<i64>> {
    let all: Vec<&Region> = regions.iter().collect();
    let mut search = Search { shape, prefix: Vec::with_capacity(shape.len()), work: 0, limit };
    search.gap(&all).ok().flatten()
}

struct Search<'a> {
    shape: &'a [i64],
    /// The coordinates chosen for the dimensions before the current one.
    prefix: Vec<i64>,
    /// Region tests made so far.
    work: usize,
    /// Region tests allowed.
    limit: usize,
}

/// The search ran out of work before it decided.
struct GaveUp;

impl Search<'_> {
    /// The first uncovered element whose leading coordinates are `prefix`,
    /// given the regions that contain every element with those coordinates.
    fn gap(&mut self, regions: &[&Region]) -> Result<Option<Vec<i64>>, GaveUp> {
        let d = self.prefix.len();
        self.work += regions.len() + 1;
        if self.work > self.limit {
            return Err(GaveUp);
        }
        let rest = &self.shape[d..];
        // A region spanning every remaining dimension covers the rest (and at
        // the last dimension, any region left covers the element).
        if regions.iter().any(|r| r[d..].iter().zip(rest).all(|(&(lo, hi), &n)| lo <= 0 && hi >= n)) {
            return Ok(None);
        }
        if regions.is_empty() {
            let mut at = self.prefix.clone();
            at.resize(self.shape.len(), 0);
            return Ok(Some(at));
        }
        // Cut the dimension where regions begin or end: each region then
        // holds a segment whole or not at all.
        let n = self.shape[d];
        let mut cuts: Vec<i64> = vec![0, n];
        for r in regions {
            cuts.push(r[d].0.clamp(0, n));
            cuts.push(r[d].1.clamp(0, n));
        }
        cuts.sort_unstable();
        cuts.dedup();
        let mut decided: Vec<Vec<usize>> = Vec::new();
        for seg in cuts.windows(2) {
            let (a, b) = (seg[0], seg[1]);
            let inside: Vec<usize> =
                (0..regions.len()).filter(|&i| regions[i][d].0 <= a && b <= regions[i][d].1).collect();
            self.work += regions.len();
            // Segments held by the same regions have the same answer.
            if decided.contains(&inside) {
                continue;
            }
            let sub: Vec<&Region> = inside.iter().map(|&i| regions[i]).collect();
            self.prefix.push(a);
            let found = self.gap(&sub)?;
            self.prefix.pop();
            if found.is_some() {
                return Ok(found);
            }
            decided.push(inside);
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::{first_unwritten, first_unwritten_within};

    #[test]
    fn finds_the_first_element_no_region_holds() {
        let full = vec![(0, 4), (0, 3)];
        assert_eq!(first_unwritten(&[full], &[4, 3]), None);
        // Rows 0..2 whole, row 2 in part, row 3 not at all.
        let regions = vec![vec![(0, 2), (0, 3)], vec![(2, 3), (0, 2)]];
        assert_eq!(first_unwritten(&regions, &[4, 3]), Some(vec![2, 2]));
        // Constants over two-element dimensions: all four corners, then three.
        let corner = |a: i64, b: i64| vec![(a, a + 1), (b, b + 1)];
        let four = vec![corner(0, 0), corner(0, 1), corner(1, 0), corner(1, 1)];
        assert_eq!(first_unwritten(&four, &[2, 2]), None);
        assert_eq!(first_unwritten(&four[1..], &[2, 2]), Some(vec![0, 0]));
        assert_eq!(first_unwritten(&[], &[5]), Some(vec![0]));
    }

    #[test]
    fn gives_up_when_the_search_is_too_long() {
        // Row 99 of a 100 x 100 tensor is missing, found after every row
        // above it was tested; with less work allowed the search gives up.
        let rows: Vec<Vec<(i64, i64)>> = (0..99).map(|r| vec![(r, r + 1), (0, 100)]).collect();
        assert_eq!(first_unwritten_within(&rows, &[100, 100], 1 << 20), Some(vec![99, 0]));
        assert_eq!(first_unwritten_within(&rows, &[100, 100], 1000), None);
    }
}
