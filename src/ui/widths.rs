//! Column widths from content: each column asks for the width of its widest visible cell
//! (header included), within its own bounds, and the room there is goes round fairly, so a
//! long column cannot starve the short ones and no column keeps blank room while another is
//! cut. Only the rows on screen are measured, so a frame costs the same with 100 000
//! elections as with ten.

/// What one column wants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Col {
    /// Below this the column is not worth showing; it gets this much before anyone grows.
    pub min: u16,
    /// The widest visible cell (or header).
    pub want: u16,
    /// Never wider than this, however much room is left (a 100 000-character name).
    pub max: u16,
    /// Columns that may be dropped, lowest first, when even the minimums do not fit; 0 is
    /// never dropped.
    pub drop: u8,
    /// Takes a share of the room left once every column has what it wants, so the table
    /// spans its pane (blank room only where nothing is cut).
    pub grow: bool,
    /// Shown only while every other column fits whole beside it: it says little the rest
    /// of the screen does not.
    pub spare: bool,
    /// Gives its room up where that lets every other column be whole, and only there:
    /// where the others would be cut anyway it stays, since going would not save them.
    pub yields: bool,
}

impl Col {
    /// A column as wide as its content, between `min` and `max`.
    pub(super) fn content(min: u16, max: u16) -> Col {
        Col {
            min,
            want: min,
            max,
            drop: 0,
            grow: false,
            spare: false,
            yields: false,
        }
    }

    /// A column of exactly `width` cells.
    pub(super) fn fixed(width: u16) -> Col {
        Col::content(width, width)
    }

    /// The column may be dropped (at `priority`, lowest first) when room is short.
    pub(super) fn droppable(mut self, priority: u8) -> Col {
        self.drop = priority;
        self
    }

    /// The column is shown only while nothing else is cut.
    pub(super) fn spare(mut self) -> Col {
        self.spare = true;
        self
    }

    /// The column goes where its room makes every other column whole.
    pub(super) fn yields(mut self) -> Col {
        self.yields = true;
        self
    }

    /// The column takes a share of the room nobody wants.
    pub(super) fn growing(mut self) -> Col {
        self.grow = true;
        self
    }

    /// The column wants `width` cells whatever the rows on screen hold: the widest form its
    /// values take as the clock runs (`9.9s` then `10.0s`, `9s ago` then `10s ago`), so it
    /// does not shift the columns right of it between two frames.
    pub(super) fn steady(mut self, width: u16) -> Col {
        self.want = self.want.max(width);
        self
    }

    /// Widens the want to fit a cell `width` wide.
    pub(super) fn fit(&mut self, width: usize) {
        let w = u16::try_from(width).unwrap_or(u16::MAX);
        self.want = self.want.max(w);
    }

    fn goal(&self) -> u16 {
        self.want.clamp(self.min, self.max.max(self.min))
    }
}

/// The cells left for the shown columns once the spacing between them is taken.
fn room(shown: &[bool], total: u16, spacing: u16) -> u16 {
    let n = shown.iter().filter(|s| **s).count() as u16;
    total.saturating_sub(spacing.saturating_mul(n.saturating_sub(1)))
}

/// Which columns are shown: the most expendable dropped until the minimums fit, then the
/// spare ones and a yielding one where that lets the rest be whole.
fn shown(cols: &[Col], total: u16, spacing: u16) -> Vec<bool> {
    let mut shown: Vec<bool> = vec![true; cols.len()];
    let room = |shown: &[bool]| room(shown, total, spacing);
    let sum = |shown: &[bool], of: fn(&Col) -> u16| -> u32 {
        cols.iter()
            .zip(shown)
            .filter(|(_, s)| **s)
            .map(|(c, _)| u32::from(of(c)))
            .sum()
    };
    // Drop the most expendable columns until the minimums fit.
    while sum(&shown, |c| c.min) > u32::from(room(&shown)) {
        let victim = cols
            .iter()
            .enumerate()
            .filter(|(i, c)| shown[*i] && c.drop > 0)
            .min_by_key(|(i, c)| (c.drop, std::cmp::Reverse(*i)));
        match victim {
            Some((i, _)) => shown[i] = false,
            None => break,
        }
    }
    let goals = |shown: &[bool]| sum(shown, Col::goal);
    if goals(&shown) > u32::from(room(&shown)) {
        for (s, c) in shown.iter_mut().zip(cols) {
            *s &= !c.spare;
        }
    }
    for i in 0..cols.len() {
        if shown[i] && cols[i].yields && goals(&shown) > u32::from(room(&shown)) {
            let mut without = shown.clone();
            without[i] = false;
            if goals(&without) <= u32::from(room(&without)) {
                shown = without;
            }
        }
    }
    shown
}

/// Widths for `cols` in `total` cells with `spacing` between columns. A dropped column gets
/// 0 (and its spacing is given back). Where not every column can have what it wants, the
/// spare columns go, then each yielding one whose room makes the rest whole. Short of room, every column first gets its minimum,
/// then each still wanting more gets one cell in turn, so the narrow ones are whole before
/// the wide ones grow; what is left over after every column has what it wants is shared
/// by the growing columns (or stays free at the right when there are none).
pub(super) fn allocate(cols: &[Col], total: u16, spacing: u16) -> Vec<u16> {
    let shown = shown(cols, total, spacing);
    let room = |shown: &[bool]| room(shown, total, spacing);
    let mut left = u32::from(room(&shown));
    let mut widths: Vec<u16> = cols
        .iter()
        .zip(&shown)
        .map(|(c, s)| if *s { c.min } else { 0 })
        .collect();
    let given: u32 = widths.iter().map(|w| u32::from(*w)).sum();
    if given > left {
        // Not even the minimums fit: the rightmost columns give way.
        let mut over = given - left;
        for w in widths.iter_mut().rev() {
            let cut = over.min(u32::from(*w)) as u16;
            *w -= cut;
            over -= u32::from(cut);
        }
        return widths;
    }
    left -= given;
    // Fair shares (water-filling): the columns needing least are served first, each with
    // at most an equal share of what is left, so a narrow column is whole before a wide one
    // grows past it.
    let need = |i: usize, widths: &[u16]| u32::from(cols[i].goal().saturating_sub(widths[i]));
    let mut hungry: Vec<usize> = (0..cols.len())
        .filter(|&i| shown[i] && need(i, &widths) > 0)
        .collect();
    hungry.sort_by_key(|&i| (need(i, &widths), i));
    let count = hungry.len() as u32;
    for (n, i) in hungry.into_iter().enumerate() {
        let share = left.div_ceil(count - n as u32);
        let give = need(i, &widths).min(share);
        widths[i] += give as u16;
        left -= give;
    }
    let growing: Vec<usize> = (0..cols.len())
        .filter(|&i| shown[i] && cols[i].grow)
        .collect();
    for (n, i) in growing.iter().enumerate() {
        let share = left / (growing.len() - n) as u32;
        widths[*i] += share as u16;
        left -= share;
    }
    widths
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(min: u16, want: u16, max: u16) -> Col {
        Col {
            min,
            want,
            max,
            drop: 0,
            grow: false,
            spare: false,
            yields: false,
        }
    }

    #[test]
    fn a_yielding_column_goes_only_where_that_makes_the_rest_whole() {
        let cols = [col(4, 20, 40), col(4, 4, 4).yields(), col(4, 10, 40)];
        assert_eq!(allocate(&cols, 36, 1), [20, 4, 10], "everything fits");
        assert_eq!(
            allocate(&cols, 33, 1),
            [20, 0, 10],
            "its room makes the rest whole"
        );
        assert_eq!(
            allocate(&cols, 25, 1),
            [9, 4, 10],
            "the rest is cut either way: it stays"
        );
    }

    #[test]
    fn a_spare_column_shows_only_while_nothing_else_is_cut() {
        let cols = [col(4, 20, 40), col(6, 9, 9).spare(), col(4, 10, 40)];
        assert_eq!(allocate(&cols, 41, 1), [20, 9, 10], "everything fits");
        assert_eq!(allocate(&cols, 35, 1), [20, 0, 10], "the name would be cut");
    }

    #[test]
    fn room_nobody_wants_goes_to_the_growing_columns() {
        let cols = [
            col(4, 10, 40).growing(),
            col(3, 6, 40),
            col(4, 10, 40).growing(),
        ];
        // 60 - 2 spaces = 58; 26 wanted; 32 left, 16 each.
        assert_eq!(allocate(&cols, 60, 1), [26, 6, 26]);
        // Short of room, growing changes nothing: wants come first.
        assert_eq!(allocate(&cols, 20, 1), [6, 6, 6]);
    }

    #[test]
    fn with_room_every_column_gets_its_content_and_the_rest_stays_free() {
        let w = allocate(&[col(4, 10, 40), col(3, 6, 40), col(2, 2, 2)], 80, 1);
        assert_eq!(w, [10, 6, 2]);
    }

    #[test]
    fn short_of_room_the_narrow_columns_are_whole_before_the_wide_grow() {
        // 30 cells - 2 spaces = 28: the 6 and 2 fit whole, the name takes the 20 left.
        let w = allocate(&[col(4, 60, 60), col(3, 6, 40), col(2, 2, 2)], 30, 1);
        assert_eq!(w, [20, 6, 2]);
    }

    #[test]
    fn two_long_columns_share_what_is_left_equally() {
        let w = allocate(&[col(4, 60, 60), col(4, 60, 60), col(5, 5, 5)], 47, 1);
        assert_eq!(w, [20, 20, 5]);
        assert_eq!(w.iter().sum::<u16>() + 2, 47);
    }

    #[test]
    fn a_column_never_grows_past_its_max() {
        let w = allocate(&[col(4, 10_000, 30), col(3, 5, 10)], 200, 1);
        assert_eq!(w, [30, 5]);
    }

    #[test]
    fn expendable_columns_go_first_when_minimums_do_not_fit() {
        let cols = [
            col(10, 10, 10),
            col(9, 9, 9).droppable(1),
            col(8, 8, 8).droppable(2),
            col(6, 6, 6),
        ];
        // 35 - 3 spaces = 32 < 33: the scheme-like column (priority 1) goes.
        let w = allocate(&cols, 35, 1);
        assert_eq!(w, [10, 0, 8, 6]);
        // Narrower still: the next one goes too.
        let w = allocate(&cols, 20, 1);
        assert_eq!(w, [10, 0, 0, 6]);
    }

    #[test]
    fn without_room_for_the_minimums_the_right_gives_way() {
        let w = allocate(&[col(10, 10, 10), col(10, 10, 10)], 15, 1);
        assert_eq!(w, [10, 4]);
    }

    #[test]
    fn fit_widens_the_want_to_the_widest_cell() {
        let mut c = Col::content(3, 20);
        for cell in ["#", "1000", "12"] {
            c.fit(cell.len());
        }
        assert_eq!(c.want, 4);
        assert_eq!(allocate(&[c], 50, 1), [4]);
    }
}
