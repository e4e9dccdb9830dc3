"""Run outputs on disk: the layout under the repository, the safe tree, and fetching files
from the Platform."""
