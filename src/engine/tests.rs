//! Unit tests of `engine`: the file-descriptor budget and the threads' shares of a total.

use super::{fd_budget, share};

#[test]
fn a_few_connections_fit_the_open_file_limit_without_raising_it() {
    let b = fd_budget(10, 2);
    assert!(b.enough(), "{b:?}");
    assert!(!b.raised(), "{b:?}");
    assert!(b.reserve >= 2 * 4 + 16, "{b:?}");
    assert_eq!(b.available as u64, b.soft - b.reserve);
}

#[test]
fn shares_add_up_to_the_total() {
    for (total, n) in [(1000, 3), (50, 2), (1, 4), (7, 7)] {
        assert_eq!((0..n).map(|i| share(total, n, i)).sum::<usize>(), total);
    }
    assert_eq!(share(10, 3, 0), 4);
}
