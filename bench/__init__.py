"""`make bench` and the large configuration it shares with the scale test."""
