//! A three-way merge of text, line by line: the changes from `base` to `ours` and from
//! `base` to `theirs` are both kept when they touch different lines; changes that overlap
//! or touch (as git judges them) are a conflict, unless both made the same change.

use std::ops::Range;

use similar::{DiffOp, TextDiff};

/// One change from the base: base lines `base` become `lines`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Hunk<'a> {
    base: Range<usize>,
    lines: Vec<&'a str>,
}

fn hunks<'a>(base: &'a str, other: &'a str) -> Vec<Hunk<'a>> {
    let diff = TextDiff::from_lines(base, other);
    let new_lines: Vec<&str> = diff.new_slices().to_vec();
    diff.ops()
        .iter()
        .filter(|op| !matches!(op, DiffOp::Equal { .. }))
        .map(|op| Hunk {
            base: op.old_range(),
            lines: new_lines[op.new_range()].to_vec(),
        })
        .collect()
}

/// Whether two changes of the base cannot both be kept as they are.
fn clash(a: &Hunk<'_>, b: &Hunk<'_>) -> bool {
    // Overlapping or touching ranges; two insertions at one place touch.
    a.base.start <= b.base.end && b.base.start <= a.base.end
}

/// `base` with both sides' changes, or `None` when they clash.
pub fn merge(base: &str, ours: &str, theirs: &str) -> Option<String> {
    let base_lines: Vec<&str> = TextDiff::from_lines(base, base).old_slices().to_vec();
    let mut all: Vec<Hunk<'_>> = Vec::new();
    let (a, b) = (hunks(base, ours), hunks(base, theirs));
    for hunk in &a {
        if b.iter().any(|other| clash(hunk, other) && other != hunk) {
            return None;
        }
    }
    all.extend(a.iter().cloned());
    // The same change made on both sides is kept once.
    all.extend(b.into_iter().filter(|h| !a.contains(h)));
    all.sort_by_key(|h| (h.base.start, h.base.end));
    let mut out = String::with_capacity(ours.len().max(theirs.len()));
    let mut at = 0;
    for hunk in all {
        for line in &base_lines[at..hunk.base.start] {
            out.push_str(line);
        }
        for line in &hunk.lines {
            out.push_str(line);
        }
        at = hunk.base.end;
    }
    for line in &base_lines[at..] {
        out.push_str(line);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n";

    #[test]
    fn changes_to_different_lines_are_both_kept() {
        let ours = BASE.replace("two", "TWO");
        let theirs = BASE
            .replace("six", "SIX")
            .replace("seven\n", "seven\neight\n");
        assert_eq!(
            merge(BASE, &ours, &theirs).unwrap(),
            "one\nTWO\nthree\nfour\nfive\nSIX\nseven\neight\n"
        );
    }

    #[test]
    fn changes_to_the_same_or_touching_lines_clash_unless_equal() {
        let ours = BASE.replace("two", "TWO");
        assert_eq!(merge(BASE, &ours, &BASE.replace("two", "deux")), None);
        assert_eq!(
            merge(BASE, &ours, &BASE.replace("three", "3")),
            None,
            "touching"
        );
        assert_eq!(merge(BASE, &ours, &ours).unwrap(), ours, "the same change");
        assert_eq!(merge(BASE, BASE, &ours).unwrap(), ours, "one side only");
        // Deleting a line while the other side edits it.
        assert_eq!(
            merge(
                BASE,
                &BASE.replace("four\n", ""),
                &BASE.replace("four", "4")
            ),
            None
        );
    }
}
