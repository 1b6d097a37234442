//! The event time rows lost before they reached a query still tell (`LostTime`): shed at
//! a drop point, refused by a full queue or thinned from one, such rows never reach the
//! window operator, yet the windows they complete must close when the rows queued before
//! them are done. Invariant: times are held in stream order, and one is kept before the
//! latest only when it closes a window the latest would close later (so each window is
//! due at the arrival of the first lost row that completed it).

use super::schema::Nanos;

/// Event times (each with the arrival of the row holding it) that rows lost before they
/// reached a query still tell, in stream order: `latest`, and before it each time that
/// closed windows `latest` would have closed later (so each window is due at the arrival
/// of the first row that completed it, for its latency). Allocates only for a backlog
/// that spans window ends.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LostTime {
    earlier: Vec<(i64, Nanos)>,
    latest: Option<(i64, Nanos)>,
}

impl LostTime {
    pub fn at(time: Option<(i64, Nanos)>) -> LostTime {
        LostTime {
            earlier: Vec::new(),
            latest: time,
        }
    }

    pub fn is_none(&self) -> bool {
        self.latest.is_none()
    }

    /// Adds `time`, lost after the times held. `crosses(a, b)`: a window end lies past
    /// time `a` up to time `b` (`Pipeline::crosses`); if none does, `time` moves the
    /// watermark on but closes what the latest time held closes, due at its arrival.
    pub fn push(&mut self, time: (i64, Nanos), crosses: impl Fn(i64, i64) -> bool) {
        match self.latest {
            None => self.latest = Some(time),
            Some(last) if time.0 <= last.0 => {}
            Some(last) if crosses(last.0, time.0) => {
                self.earlier.push(last);
                self.latest = Some(time);
            }
            Some(last) => self.latest = Some((time.0, last.1)),
        }
    }

    /// Appends `later`'s times after these.
    pub fn append(&mut self, later: LostTime) {
        let Some(l) = later.latest else {
            return;
        };
        if let Some(mine) = self.latest.take() {
            self.earlier.push(mine);
        }
        self.earlier.extend(later.earlier);
        self.latest = Some(l);
    }

    /// The times in stream order.
    pub fn times(&self) -> impl Iterator<Item = (i64, Nanos)> + '_ {
        self.earlier.iter().copied().chain(self.latest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Window ends every 10 time units.
    fn crosses(a: i64, b: i64) -> bool {
        (a.div_euclid(10) + 1) * 10 <= b
    }

    #[test]
    fn a_time_is_kept_before_the_latest_only_when_it_closes_windows_sooner() {
        let mut l = LostTime::default();
        assert!(l.is_none());
        l.push((12, 100), crosses);
        // Same window span: moves on, due at the first arrival.
        l.push((15, 200), crosses);
        assert_eq!(l.times().collect::<Vec<_>>(), vec![(15, 100)]);
        // An earlier time changes nothing.
        l.push((14, 250), crosses);
        // Past the end at 20: both kept, in order.
        l.push((23, 300), crosses);
        assert_eq!(l.times().collect::<Vec<_>>(), vec![(15, 100), (23, 300)]);
        let mut first = LostTime::at(Some((5, 50)));
        first.append(l);
        assert_eq!(
            first.times().collect::<Vec<_>>(),
            vec![(5, 50), (15, 100), (23, 300)]
        );
        first.append(LostTime::default());
        assert_eq!(first.times().count(), 3);
    }
}
