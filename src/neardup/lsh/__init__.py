"""Banding theory: choosing (bands, rows), the S-curve, and band keys. The indexes are in :mod:`neardup.index`."""
