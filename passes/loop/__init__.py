"""deplodock."""
