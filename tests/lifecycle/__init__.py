"""The lifecycle suite (issue 22): a team's whole life as a Hypothesis state machine."""
