"""soak"""
