"""The Modelplane API: typed models of every kind, the contract everything derives from."""
