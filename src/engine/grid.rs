//! The grid of a thread's multiplexed connections (HTTP/2, HTTP/3): one per group of `--streams` slots and
//! endpoint, and which one a slot sends on.

use std::cell::RefCell;
use std::rc::Rc;

/// The shape of a thread's pool, made before the thread starts (the pool itself holds `Rc`s, made on the thread).
pub(super) struct Spec {
    /// The thread's share of `-c`.
    pub connections: usize,
    pub endpoints: usize,
    pub streams: usize,
    /// Open loop: a due slot takes any connection with a free stream.
    pub spread: bool,
}

/// A connection that carries many streams at once, as the grid sees it.
pub(super) trait Multiplexed {
    /// Its requests under way when it is open with a stream free (of `streams` asked), None otherwise.
    fn in_flight_if_free(&self, streams: usize) -> Option<usize>;
    /// Opening or open: its slots go on with it.
    fn usable(&self) -> bool;
}

/// A connection per (group of `streams` slots, endpoint) of the thread's share of `-c`.
pub(super) struct Grid<C> {
    pub streams: usize,
    /// Closed loop: a slot keeps to its group's connection. Open loop: any connection with a free stream.
    pub spread: bool,
    pub conns: RefCell<Vec<Vec<Option<Rc<C>>>>>,
}

impl<C: Multiplexed> Grid<C> {
    pub fn new(spec: &Spec) -> Self {
        Self {
            streams: spec.streams.max(1),
            spread: spec.spread,
            conns: RefCell::new((0..spec.connections.max(1)).map(|_| vec![None; spec.endpoints]).collect()),
        }
    }

    /// The connection `slot` sends on to `endpoint`: in an open loop the least busy open one with a free stream,
    /// else its group's while usable, else the one `open` makes in its place (given the one that ended, if any).
    pub fn pick(&self, slot: usize, endpoint: usize, open: impl FnOnce(Option<&C>) -> Rc<C>) -> Rc<C> {
        let mut conns = self.conns.borrow_mut();
        if self.spread {
            let best = conns
                .iter()
                .filter_map(|g| g[endpoint].as_ref())
                .filter_map(|c| c.in_flight_if_free(self.streams).map(|n| (n, c)))
                .min_by_key(|(n, _)| *n);
            if let Some((_, c)) = best {
                return Rc::clone(c);
            }
        }
        let group = (slot / self.streams).min(conns.len() - 1);
        let cell = &mut conns[group][endpoint];
        if let Some(c) = cell.as_ref().filter(|c| c.usable()) {
            return Rc::clone(c);
        }
        let conn = open(cell.as_deref());
        *cell = Some(Rc::clone(&conn));
        conn
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    struct Fake {
        open: Cell<bool>,
        in_flight: Cell<usize>,
        id: usize,
    }

    impl Multiplexed for Fake {
        fn in_flight_if_free(&self, streams: usize) -> Option<usize> {
            (self.open.get() && self.in_flight.get() < streams).then(|| self.in_flight.get())
        }
        fn usable(&self) -> bool {
            self.open.get()
        }
    }

    fn grid(connections: usize, streams: usize, spread: bool) -> Grid<Fake> {
        Grid::new(&super::Spec { connections, endpoints: 1, streams, spread })
    }

    fn fake(id: usize) -> Rc<Fake> {
        Rc::new(Fake { open: Cell::new(true), in_flight: Cell::new(0), id })
    }

    #[test]
    fn a_slot_keeps_to_its_groups_connection_and_reopens_it_once_ended() {
        let g = grid(2, 4, false);
        let mut made = 0;
        let mut open = |ended: Option<&Fake>| {
            made += 1;
            fake(ended.map_or(0, |e| e.id) + 10)
        };
        let a = g.pick(0, 0, &mut open);
        assert_eq!(g.pick(3, 0, &mut open).id, a.id);
        let b = g.pick(4, 0, &mut open);
        // Slots past the last group share the last connection.
        assert_eq!(g.pick(100, 0, &mut open).id, b.id);
        a.open.set(false);
        let again = g.pick(1, 0, &mut open);
        assert_eq!(again.id, a.id + 10, "made from the ended one");
        assert_eq!(made, 3);
    }

    #[test]
    fn an_open_loop_takes_the_least_busy_connection_with_a_free_stream() {
        let g = grid(2, 2, true);
        let a = g.pick(0, 0, |_| fake(1));
        // Free streams on the first: every slot takes it.
        assert_eq!(g.pick(2, 0, |_| unreachable!()).id, a.id);
        a.in_flight.set(2);
        let b = g.pick(2, 0, |_| fake(2));
        assert_eq!(b.id, 2);
        a.in_flight.set(1);
        assert_eq!(g.pick(0, 0, |_| unreachable!()).id, b.id);
        b.in_flight.set(2);
        assert_eq!(g.pick(3, 0, |_| unreachable!()).id, a.id);
        // None free: the slot's own group's, usable though full.
        a.in_flight.set(2);
        assert_eq!(g.pick(3, 0, |_| unreachable!()).id, b.id);
    }
}
