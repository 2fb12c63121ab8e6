"""The release decision: the two sides of a comparison, slices, paired statistics, the acceptance
policy and its verdict, and the reports that render them."""
